// JsonValue, the recursive-descent parser and the compact writer declared in app/json.h.
#include "formats/json.h"

#include <charconv>
#include <cmath>
#include <system_error>
#include <unordered_set>

#include "base/check.h"

namespace rt {
namespace {

const char* kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "a bool";
    case JsonValue::Kind::kNumber: return "a number";
    case JsonValue::Kind::kString: return "a string";
    case JsonValue::Kind::kArray: return "an array";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "?";
}

// Exactly representable as int64: integral and inside [-2^63, 2^63). -0.0 stays a double so the
// writer keeps its sign.
bool double_is_int64(double value) {
  return std::isfinite(value) && value == std::trunc(value) && value >= -9223372036854775808.0 &&
         value < 9223372036854775808.0 && !(value == 0.0 && std::signbit(value));
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[32];
  // Shortest text that parses back to the same double.
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  RT_ASSERT(ec == std::errc());
  out.append(buf, end);
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  JsonValue parse_document() {
    skip_space();
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t pos, std::string_view what) const {
    throw_check_failure(__FILE__, __LINE__, str_cat(source_, ": malformed JSON at byte ", pos, ": ", what));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  void expect_literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail(str_cat("expected '", word, "'"));
    pos_ += word.size();
  }

  JsonValue parse_value(int depth) {
    if (at_end()) fail("unexpected end of input, expected a value");
    switch (peek()) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return JsonValue(parse_string());
      case 't': expect_literal("true"); return JsonValue(true);
      case 'f': expect_literal("false"); return JsonValue(false);
      case 'n': expect_literal("null"); return JsonValue();
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
        fail(str_cat("unexpected character '", peek(), "', expected a value"));
    }
  }

  void check_depth(int depth) const {
    if (depth > kMaxJsonDepth) fail(str_cat("nesting deeper than ", kMaxJsonDepth, " levels"));
  }

  JsonValue parse_array(int depth) {
    check_depth(depth);
    ++pos_;  // '['
    JsonValue result = JsonValue::array();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return result;
    }
    for (;;) {
      skip_space();
      result.push_back(parse_value(depth));
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == ']') {
        ++pos_;
        return result;
      } else {
        fail("expected ',' or ']' in array");
      }
    }
  }

  JsonValue parse_object(int depth) {
    check_depth(depth);
    ++pos_;  // '{'
    JsonValue::Object members;
    std::unordered_set<std::string> seen;  // keeps huge headers linear, not quadratic
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return JsonValue::object(std::move(members));
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a string key in object");
      const size_t key_pos = pos_;
      std::string key = parse_string();
      // Rejected rather than silently merged: in a safetensors header a repeated key is a
      // repeated tensor name.
      if (!seen.insert(key).second) fail_at(key_pos, str_cat("duplicate key \"", key, "\" in object"));
      skip_space();
      if (peek() != ':') fail("expected ':' after object key");
      ++pos_;
      skip_space();
      JsonValue value = parse_value(depth);
      members.emplace_back(std::move(key), std::move(value));
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == '}') {
        ++pos_;
        return JsonValue::object(std::move(members));
      } else {
        fail("expected ',' or '}' in object");
      }
    }
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= c - '0';
      else if (c >= 'a' && c <= 'f') cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') cp |= c - 'A' + 10;
      else fail_at(pos_ - 1, "bad hex digit in \\u escape");
    }
    return cp;
  }

  std::string parse_string() {
    const size_t start = pos_;
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail_at(start, "unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("unescaped control character in string");
      if (c != '\\') {
        out += c;  // UTF-8 bytes pass through
        ++pos_;
        continue;
      }
      const size_t escape_pos = pos_;
      ++pos_;
      if (at_end()) fail_at(start, "unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") fail_at(escape_pos, "high surrogate without a low surrogate");
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail_at(escape_pos, "high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(escape_pos, "lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail_at(escape_pos, str_cat("invalid escape '\\", e, "'"));
      }
    }
  }

  JsonValue parse_number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
      return pos_ - from;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (digits() == 0) fail("expected a digit after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) fail("expected a digit in exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      auto [ptr, ec] = std::from_chars(first, last, i);
      if (ec == std::errc() && ptr == last) return JsonValue(i);
      // Beyond int64: fall through to a double.
    }
    double d = 0.0;
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (ec == std::errc::result_out_of_range) fail_at(start, "number out of the range of a double");
    if (ec != std::errc() || ptr != last) fail_at(start, "malformed number");
    return JsonValue(d);
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

void write_value(std::string& out, const JsonValue& value) {
  switch (value.kind()) {
    case JsonValue::Kind::kNull: out += "null"; return;
    case JsonValue::Kind::kBool: out += value.as_bool() ? "true" : "false"; return;
    case JsonValue::Kind::kNumber:
      if (value.is_int()) out += std::to_string(value.as_int());
      else append_number(out, value.as_double());
      return;
    case JsonValue::Kind::kString: append_json_string(out, value.as_string()); return;
    case JsonValue::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const JsonValue& item : value.as_array()) {
        if (!first) out += ',';
        first = false;
        write_value(out, item);
      }
      out += ']';
      return;
    }
    case JsonValue::Kind::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.as_object()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        write_value(out, item);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

JsonValue::JsonValue(double value) : kind_(Kind::kNumber), number_(value) {
  if (double_is_int64(value)) {
    is_int_ = true;
    int_ = static_cast<int64_t>(value);
  }
}

JsonValue::JsonValue(int64_t value)
    : kind_(Kind::kNumber), is_int_(true), number_(static_cast<double>(value)), int_(value) {}

JsonValue JsonValue::array(Array items) {
  JsonValue v;
  v.kind_ = Kind::kArray;
  v.array_ = std::move(items);
  return v;
}

JsonValue JsonValue::object(Object members) {
  JsonValue v;
  v.kind_ = Kind::kObject;
  std::unordered_set<std::string_view> keys;
  for (const auto& member : members) {
    RT_CHECK(keys.insert(member.first).second, "JSON: duplicate key \"", member.first, "\" in object");
  }
  v.object_ = std::move(members);
  return v;
}

bool JsonValue::as_bool() const {
  RT_CHECK(is_bool(), "JSON: expected a bool, got ", kind_name(kind_));
  return bool_;
}

double JsonValue::as_double() const {
  RT_CHECK(is_number(), "JSON: expected a number, got ", kind_name(kind_));
  return number_;
}

int64_t JsonValue::as_int() const {
  RT_CHECK(is_number(), "JSON: expected an integer, got ", kind_name(kind_));
  RT_CHECK(is_int_, "JSON: expected an integer, got ", to_json(*this));
  return int_;
}

const std::string& JsonValue::as_string() const {
  RT_CHECK(is_string(), "JSON: expected a string, got ", kind_name(kind_));
  return string_;
}

const JsonValue::Array& JsonValue::as_array() const {
  RT_CHECK(is_array(), "JSON: expected an array, got ", kind_name(kind_));
  return array_;
}

const JsonValue::Object& JsonValue::as_object() const {
  RT_CHECK(is_object(), "JSON: expected an object, got ", kind_name(kind_));
  return object_;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

JsonValue& JsonValue::set(std::string key, JsonValue value) {
  RT_CHECK(is_object(), "JSON: set(\"", key, "\") on ", kind_name(kind_), ", expected an object");
  for (auto& [k, v] : object_) {
    if (k == key) return v = std::move(value);
  }
  object_.emplace_back(std::move(key), std::move(value));
  return object_.back().second;
}

void JsonValue::push_back(JsonValue value) {
  RT_CHECK(is_array(), "JSON: push_back on ", kind_name(kind_), ", expected an array");
  array_.push_back(std::move(value));
}

bool JsonValue::operator==(const JsonValue& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kNull: return true;
    case Kind::kBool: return bool_ == other.bool_;
    case Kind::kNumber:
      if (is_int_ && other.is_int_) return int_ == other.int_;
      return number_ == other.number_;
    case Kind::kString: return string_ == other.string_;
    case Kind::kArray: return array_ == other.array_;
    case Kind::kObject: return object_ == other.object_;
  }
  return false;
}

JsonValue parse_json(std::string_view text, std::string_view source) {
  return Parser(text, source).parse_document();
}

std::string to_json(const JsonValue& value) {
  std::string out;
  write_value(out, value);
  return out;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xF];
        } else {
          out += c;
        }
      }
    }
  }
  out += '"';
}

JsonLine& JsonLine::add_raw(std::string_view key, std::string_view json_text) {
  if (!body_.empty()) body_ += ',';
  append_json_string(body_, key);
  body_ += ':';
  body_ += json_text;
  return *this;
}

JsonLine& JsonLine::add(std::string_view key, double value) {
  std::string text;
  append_number(text, value);
  return add_raw(key, text);
}

JsonLine& JsonLine::add(std::string_view key, int64_t value) { return add_raw(key, std::to_string(value)); }

JsonLine& JsonLine::add(std::string_view key, std::string_view value) {
  std::string text;
  append_json_string(text, value);
  return add_raw(key, text);
}

JsonLine& JsonLine::add(std::string_view key, bool value) { return add_raw(key, value ? "true" : "false"); }

}  // namespace rt
