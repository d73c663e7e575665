// A small JSON value (null, bool, number, string, array, object with insertion-ordered keys), a
// strict parser and a compact writer. Numbers keep their double value and, when integral and in
// range, an exact int64 (so byte offsets above 2^53 survive). Parsed objects never hold duplicate
// keys; parse errors are rt::Error naming the source and the byte offset. JsonLine writes one
// metrics record per line without building a JsonValue.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rt {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;  // in insertion order

  JsonValue() = default;  // null
  JsonValue(std::nullptr_t) {}
  JsonValue(bool value) : kind_(Kind::kBool), bool_(value) {}
  JsonValue(double value);
  JsonValue(int64_t value);
  JsonValue(int value) : JsonValue(static_cast<int64_t>(value)) {}
  JsonValue(std::string value) : kind_(Kind::kString), string_(std::move(value)) {}
  JsonValue(std::string_view value) : JsonValue(std::string(value)) {}
  JsonValue(const char* value) : JsonValue(std::string(value)) {}
  static JsonValue array(Array items = {});
  static JsonValue object(Object members = {});  // rt::Error on a repeated key

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_int() const { return kind_ == Kind::kNumber && is_int_; }  // integral, fits int64
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors throw rt::Error when the kind differs (as_int also when the number is not integral).
  bool as_bool() const;
  double as_double() const;
  int64_t as_int() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Objects: find returns nullptr when the key is absent (or this is not an object); set replaces
  // an existing key in place or appends. Arrays: push_back appends.
  const JsonValue* find(std::string_view key) const;
  JsonValue& set(std::string key, JsonValue value);
  void push_back(JsonValue value);

  // Numbers compare by value; objects compare member by member in order.
  bool operator==(const JsonValue& other) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool is_int_ = false;
  double number_ = 0.0;
  int64_t int_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

// Containers nested deeper than this are rejected, so hostile input cannot exhaust the stack.
inline constexpr int kMaxJsonDepth = 256;

// Parses exactly one JSON value surrounded by optional whitespace. `source` names the text in
// error messages (a file name, "header of x.safetensors").
JsonValue parse_json(std::string_view text, std::string_view source = "JSON text");

// Compact: no whitespace. Non-finite numbers are written as null; strings are escaped (quote,
// backslash, control characters), other bytes (UTF-8) are passed through unchanged.
std::string to_json(const JsonValue& value);

// Appends `text` as a quoted, escaped JSON string to `out`.
void append_json_string(std::string& out, std::string_view text);

// One compact JSON object, built member by member: JsonLine().add("step", 3).add("loss", 0.5).str()
// gives {"step":3,"loss":0.5}. Keys are written in the order added and are not checked for repeats.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, double value);  // non-finite -> null
  JsonLine& add(std::string_view key, int64_t value);
  JsonLine& add(std::string_view key, std::string_view value);
  JsonLine& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  JsonLine& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
  JsonLine& add(std::string_view key, bool value);
  // Any other integer type (int, size_t, ...); without this add("k", 3) would be ambiguous.
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, int64_t>)
  JsonLine& add(std::string_view key, T value) {
    return add_raw(key, std::to_string(value));
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  JsonLine& add_raw(std::string_view key, std::string_view json_text);
  std::string body_;
};

}  // namespace rt
