// Loads a TOML document into a Root struct by its key schema (config/schema.h): every problem found
// is collected and reported at once, in file order, each line naming where the value came from
// ("PATH:LINE" or "--set table.key=value") and the key. Rules that tie keys together are the
// caller's, through fail() and origin_of() before finish().
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/join.h"
#include "config/schema.h"
#include "config/schema_suggest.h"

namespace rt {
namespace schema_detail {

// ---- Formatting values as TOML (used by to_toml and by error messages) ----

// Shortest text that parses back to the same double (std::to_chars guarantees the round trip;
// "general" keeps 0.0005 fixed and 1e-07 scientific, as people write them), always with a '.' or
// an exponent so that TOML reads it back as a float, not an integer.
inline std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr;
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

inline std::string format_value(int64_t v) { return std::to_string(v); }
inline std::string format_value(bool v) { return v ? "true" : "false"; }

inline std::string format_value(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

inline std::string format_value(const EnumRef& value) { return format_value(std::string(value.name())); }

inline std::string format_value(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + format_value(values[i]);
  return out + "]";
}

inline std::string format_value(const NumberTable& values) {
  std::string out = "{";
  for (const auto& [name, v] : values) out += str_cat(out.size() > 1 ? ", " : " ", name, " = ", format_value(v));
  return out + (values.empty() ? "}" : " }");
}

// A bound's number as people write it: "1", "0.5" (no forced ".0").
inline std::string format_plain(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr);
}

inline std::string describe(const Bound& b) {
  bool has_lo = std::isfinite(b.lo), has_hi = std::isfinite(b.hi);
  if (has_lo && has_hi)
    return str_cat("in ", b.lo_open ? "(" : "[", format_plain(b.lo), ", ", format_plain(b.hi), b.hi_open ? ")" : "]");
  if (has_lo) return str_cat(b.lo_open ? "> " : ">= ", format_plain(b.lo));
  if (has_hi) return str_cat(b.hi_open ? "< " : "<= ", format_plain(b.hi));
  return "";
}

inline bool within(const Bound& b, double v) {
  return (b.lo_open ? v > b.lo : v >= b.lo) && (b.hi_open ? v < b.hi : v <= b.hi);
}

inline std::string type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// ---- Reading values out of TOML nodes ----

inline std::string_view expected_name(bool*) { return "a boolean"; }
inline std::string_view expected_name(int64_t*) { return "an integer"; }
inline std::string_view expected_name(double*) { return "a number"; }
inline std::string_view expected_name(std::string*) { return "a string"; }
inline std::string_view expected_name(EnumRef*) { return "a string"; }
inline std::string_view expected_name(std::vector<double>*) { return "an array of numbers"; }
inline std::string_view expected_name(NumberTable*) { return "a table of numbers"; }

// Each read returns false when the node holds another type; integers pass as numbers.
inline bool read(const toml::node& n, bool& out) {
  if (auto v = n.as_boolean()) return out = v->get(), true;
  return false;
}
inline bool read(const toml::node& n, int64_t& out) {
  if (auto v = n.as_integer()) return out = v->get(), true;
  return false;
}
inline bool read(const toml::node& n, double& out) {
  if (auto v = n.as_floating_point()) return out = v->get(), true;
  if (auto v = n.as_integer()) return out = static_cast<double>(v->get()), true;
  return false;
}
inline bool read(const toml::node& n, std::string& out) {
  if (auto v = n.as_string()) return out = v->get(), true;
  return false;
}
inline bool read(const toml::node& n, std::vector<double>& out) {
  auto array = n.as_array();
  if (!array) return false;
  std::vector<double> values(array->size());
  for (size_t i = 0; i < array->size(); ++i)
    if (!read(*array->get(i), values[i])) return false;
  out = std::move(values);
  return true;
}
inline bool read(const toml::node& n, NumberTable& out) {
  auto table = n.as_table();
  if (!table) return false;
  NumberTable values;
  for (auto&& [name, value] : *table)
    if (!read(value, values[std::string(name.str())])) return false;
  out = std::move(values);
  return true;
}

// What a node holds, for "got ...": arrays and tables name their first offending element.
inline std::string got_name(const toml::node& n) {
  if (auto table = n.as_table()) {
    for (auto&& [name, value] : *table) {
      auto t = value.type();
      if (t != toml::node_type::integer && t != toml::node_type::floating_point)
        return str_cat("a table holding ", type_name(t), " at '", name.str(), "'");
    }
  }
  if (auto array = n.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) {
      auto t = array->get(i)->type();
      if (t != toml::node_type::integer && t != toml::node_type::floating_point)
        return str_cat("an array holding ", type_name(t), " at index ", i);
    }
  }
  return type_name(n.type());
}

inline size_t line_of(const toml::key& k, const toml::node& n) {
  return k.source().begin.line ? k.source().begin.line : n.source().begin.line;
}

// Where a key's value came from: the file and line, an override, or the default.
struct Origin {
  std::string where;
  size_t rank = 0;  // order of errors: file lines first, then overrides in command-line order
};

}  // namespace schema_detail

template <typename Root>
class SchemaLoader {
 public:
  using Spec = KeySpecOf<Root>;
  using Origin = schema_detail::Origin;

  SchemaLoader(std::string source, const SchemaOf<Root>& schema) : source_(std::move(source)), schema_(schema) {
    origins_.assign(schema_.size(), Origin{source_, 0});
    unknown_names_.assign(schema_.size(), "");
    given_.assign(schema_.size(), false);
    read_.assign(schema_.size(), false);
  }

  void apply_document(const toml::table& root) {
    using namespace schema_detail;
    for (auto&& [name, node] : root) {
      Origin at{str_cat(source_, ":", line_of(name, node)), line_of(name, node)};
      const toml::table* table = node.as_table();
      if (const Spec* spec = find_key(schema_, "", name.str())) {
        apply(*spec, node, at);
        continue;
      }
      if (!is_table(schema_, name.str())) {
        if (table) {
          apply_unknown_table(name.str(), at);
        } else if (has_top_level_keys()) {
          fail(at, suggest::unknown_key_message(schema_, "", name.str()));
        } else {
          auto names = suggest::near_keys(schema_, "", name.str());
          fail(at, str_cat("key '", name.str(), "' is outside any table; every key belongs to one of: ",
                           join(table_names(schema_), ", "), names.empty() ? "" : suggest::did_you_mean(names)));
        }
        continue;
      }
      if (!table) {
        fail(at, str_cat("'", name.str(), "' must be a table ([", name.str(), "]), got ", type_name(node.type())));
        continue;
      }
      for (auto&& [key, value] : *table) {
        Origin key_at{str_cat(source_, ":", line_of(key, value)), line_of(key, value)};
        if (const Spec* spec = find_key(schema_, name.str(), key.str()))
          apply(*spec, value, key_at);
        else
          fail(key_at, suggest::unknown_key_message(schema_, name.str(), key.str()));
      }
    }
  }

  // `arg` is "table.key=value"; the value is TOML, or a bare word taken as a string.
  void apply_override(const std::string& arg, size_t index) {
    using namespace schema_detail;
    Origin at{"--set " + arg, kOverrideRank + index};
    size_t eq = arg.find('=');
    std::string path = trim(arg.substr(0, eq));
    size_t dot = path.find('.');
    if (eq == std::string::npos) return fail(at, "expected table.key=value, found no '='");
    if (dot == std::string::npos) {
      auto names = suggest::near_keys(schema_, "", path);
      return fail(at, str_cat("'", path, "' names no table: expected table.key=value",
                              names.empty() ? "" : suggest::did_you_mean(names)));
    }
    std::string table = path.substr(0, dot), key = path.substr(dot + 1);
    const Spec* spec = find_key(schema_, table, key);
    if (!spec) return fail(at, suggest::unknown_key_message(schema_, table, key));
    std::string text = trim(arg.substr(eq + 1));
    if (text.empty()) return fail(at, str_cat("no value after '=' (an empty string is written ", path, "='\"\"')"));
    try {
      toml::table doc = toml::parse("v = " + text, at.where);
      if (doc.size() != 1) return fail(at, str_cat("'", text, "' is not a single TOML value"));
      apply(*spec, *doc.get("v"), at);
    } catch (const toml::parse_error& e) {
      if (!is_bare_word(text)) return fail(at, str_cat("cannot read '", text, "' as a TOML value: ", e.description()));
      apply(*spec, toml::value<std::string>(text), at);
    }
  }

  // Ranges, choices and required keys, on the final values (after every override).
  void validate() {
    for (size_t i = 0; i < schema_.size(); ++i) {
      if (schema_[i].required && !given_[i])
        fail_missing(schema_[i]);
      else if (!unknown_names_[i].empty())
        fail_unknown_name(schema_[i], std::get<EnumFieldOf<Root>>(schema_[i].field)(value_), unknown_names_[i],
                          origins_[i]);
      else
        std::visit([&](auto ref) { check(schema_[i], ref(value_), origins_[i]); }, schema_[i].field);
    }
  }

  // A key that only some uses of the file need: missing is an error where the caller says so.
  void require(std::string_view table, std::string_view key) {
    if (!given(table, key)) fail_missing(schema_[index_of(table, key)]);
  }

  Root& value() { return value_; }
  // Whether the document or an override gave table.key; and gave it a value of the right type.
  bool given(std::string_view table, std::string_view key) const { return given_[index_of(table, key)]; }
  bool has_value(std::string_view table, std::string_view key) const { return read_[index_of(table, key)]; }
  const Origin& origin_of(std::string_view table, std::string_view key) const { return origins_[index_of(table, key)]; }
  bool failed() const { return !errors_.empty(); }
  void fail(const Origin& at, const std::string& message) {
    errors_.emplace_back(at.rank, str_cat(at.where, ": ", message));
  }

  // The loaded value, or rt::Error with every problem, one per line in file order.
  Root finish() {
    if (errors_.empty()) return value_;
    std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string message;
    for (const auto& [rank, text] : errors_) message += (message.empty() ? "" : "\n") + text;
    throw Error(message);
  }

 private:
  static constexpr size_t kOverrideRank = size_t{1} << 40;

  size_t index_of(std::string_view table, std::string_view key) const {
    const Spec* spec = find_key(schema_, table, key);
    RT_ASSERT(spec);
    return static_cast<size_t>(spec - schema_.data());
  }

  // Where a problem of the whole document is reported: the file, after its own lines' problems.
  Origin whole_document() const { return {source_, kOverrideRank - 1}; }

  void fail_missing(const Spec& spec) {
    fail(whole_document(), str_cat("missing key '", full_name(spec), "' (", spec.doc, ")"));
  }

  bool has_top_level_keys() const {
    return std::any_of(schema_.begin(), schema_.end(), [](const Spec& s) { return s.table.empty(); });
  }

  void apply(const Spec& spec, const toml::node& node, const Origin& at) {
    using namespace schema_detail;
    const size_t i = static_cast<size_t>(&spec - schema_.data());
    given_[i] = true;  // even with a value of the wrong type: that is its error, not a missing key
    std::visit(
        [&](auto ref) {
          auto&& field = ref(value_);
          bool typed = false;
          if constexpr (std::is_same_v<std::decay_t<decltype(field)>, EnumRef>) {
            // A word outside the key's table is reported by validate(), unless an override replaces it.
            std::string name;
            typed = read(node, name);
            if (typed) unknown_names_[i] = field.set_named(name) ? "" : name;
          } else {
            typed = read(node, field);
          }
          if (!typed) {
            fail(at, str_cat("'", full_name(spec), "' expects ", expected_name(&field), ", got ", got_name(node)));
            return;
          }
          origins_[i] = at;
          read_[i] = true;
        },
        spec.field);
  }

  void apply_unknown_table(std::string_view name, const Origin& at) {
    std::vector<std::string> near;
    for (std::string_view t : table_names(schema_))
      if (suggest::closeness(name, t)) near.push_back(str_cat(t));
    fail(at, str_cat("unknown table '", name, "'",
                     near.empty() ? str_cat(" (tables are: ", join(table_names(schema_), ", "), ")")
                                  : suggest::did_you_mean(near)));
  }

  void check(const Spec&, bool, const Origin&) {}

  void check(const Spec& spec, int64_t v, const Origin& at) {
    if (!schema_detail::within(spec.bound, static_cast<double>(v)))
      fail(at, str_cat("'", full_name(spec), "' = ", v, " is out of range: expected ",
                       schema_detail::describe(spec.bound)));
  }

  void check(const Spec& spec, double v, const Origin& at, std::string_view suffix = "") {
    std::string name = str_cat("'", full_name(spec), suffix, "' = ", schema_detail::format_value(v));
    if (!std::isfinite(v))
      fail(at, name + " is not a finite number");
    else if (!schema_detail::within(spec.bound, v))
      fail(at, str_cat(name, " is out of range: expected ", schema_detail::describe(spec.bound)));
  }

  void check(const Spec& spec, const std::string& v, const Origin& at) {
    if (spec.non_empty && v.empty()) fail(at, str_cat("'", full_name(spec), "' must not be empty"));
  }

  void check(const Spec&, const EnumRef&, const Origin&) {}  // set_named kept it in its table

  void fail_unknown_name(const Spec& spec, const EnumRef& field, const std::string& v, const Origin& at) {
    std::vector<std::string> near;
    for (std::string_view c : field.names)  // stricter than for keys: "gpu" must not suggest "cpu"
      if (suggest::edit_distance(v, c) * 4 <= v.size()) near.push_back(str_cat(c));
    fail(at, str_cat("'", full_name(spec), "' = ", schema_detail::format_value(v),
                     " is not one of: ", join(field.names, ", "), near.empty() ? "" : suggest::did_you_mean(near)));
  }

  void check(const Spec& spec, const std::vector<double>& v, const Origin& at) {
    if (spec.non_empty && v.empty()) fail(at, str_cat("'", full_name(spec), "' must hold at least one value"));
    for (size_t i = 0; i < v.size(); ++i) check(spec, v[i], at, str_cat("[", i, "]"));
    for (size_t i = 1; i < v.size(); ++i) {
      if (spec.increasing && !(v[i - 1] < v[i])) {
        fail(at, str_cat("'", full_name(spec), "' = ", schema_detail::format_value(v), " must be strictly increasing"));
        break;
      }
    }
  }

  void check(const Spec& spec, const NumberTable& v, const Origin& at) {
    if (spec.non_empty && v.empty()) fail(at, str_cat("'", full_name(spec), "' must hold at least one value"));
    for (const auto& [name, number] : v) check(spec, number, at, str_cat(".", name));
  }

  static std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }

  // A word that TOML would not misread: no spaces, quotes, brackets, braces, commas, '=' or '#'.
  static bool is_bare_word(const std::string& s) { return s.find_first_of(" \t\r\n\"'[]{},=#\\") == std::string::npos; }

  std::string source_;
  const SchemaOf<Root>& schema_;
  Root value_{};
  std::vector<Origin> origins_;                         // indexed like the schema
  std::vector<bool> given_, read_;                      // indexed like the schema
  std::vector<std::string> unknown_names_;              // enum keys: a word outside the table, or ""
  std::vector<std::pair<size_t, std::string>> errors_;  // (rank, "where: message")
};

}  // namespace rt
