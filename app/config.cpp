// Loading, validating and printing the run configuration, all driven by the schema in
// app/config_schema.h. Every problem found is collected and reported at once, in file order, each
// line naming where the value came from ("PATH:LINE" or "--set table.key=value") and the key.
#include "app/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "app/config_schema.h"
#include "app/config_suggest.h"
#include "base/check.h"

namespace rt {
namespace {

using suggest::closeness;
using suggest::did_you_mean;
using suggest::edit_distance;
using suggest::join;
using suggest::near_keys;
using suggest::unknown_key_message;

// ---- Formatting values as TOML (used by to_toml and by error messages) ----

// Shortest text that parses back to the same double (std::to_chars guarantees the round trip;
// "general" keeps 0.0005 fixed and 1e-07 scientific, as people write them), always with a '.' or
// an exponent so that TOML reads it back as a float, not an integer.
std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr;
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_value(int64_t v) { return std::to_string(v); }
std::string format_value(bool v) { return v ? "true" : "false"; }

std::string format_value(const std::string& s) {
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

std::string format_value(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + format_value(values[i]);
  return out + "]";
}

// A bound's number as people write it: "1", "0.5" (no forced ".0").
std::string format_plain(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr);
}

std::string describe(const Bound& b) {
  bool has_lo = std::isfinite(b.lo), has_hi = std::isfinite(b.hi);
  if (has_lo && has_hi)
    return str_cat("in ", b.lo_open ? "(" : "[", format_plain(b.lo), ", ", format_plain(b.hi), b.hi_open ? ")" : "]");
  if (has_lo) return str_cat(b.lo_open ? "> " : ">= ", format_plain(b.lo));
  if (has_hi) return str_cat(b.hi_open ? "< " : "<= ", format_plain(b.hi));
  return "";
}

bool within(const Bound& b, double v) {
  return (b.lo_open ? v > b.lo : v >= b.lo) && (b.hi_open ? v < b.hi : v <= b.hi);
}

std::string type_name(toml::node_type t) {
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

std::string_view expected_name(bool*) { return "a boolean"; }
std::string_view expected_name(int64_t*) { return "an integer"; }
std::string_view expected_name(double*) { return "a number"; }
std::string_view expected_name(std::string*) { return "a string"; }
std::string_view expected_name(std::vector<double>*) { return "an array of numbers"; }

// Each read returns false when the node holds another type; integers pass as numbers.
bool read(const toml::node& n, bool& out) {
  if (auto v = n.as_boolean()) return out = v->get(), true;
  return false;
}
bool read(const toml::node& n, int64_t& out) {
  if (auto v = n.as_integer()) return out = v->get(), true;
  return false;
}
bool read(const toml::node& n, double& out) {
  if (auto v = n.as_floating_point()) return out = v->get(), true;
  if (auto v = n.as_integer()) return out = static_cast<double>(v->get()), true;
  return false;
}
bool read(const toml::node& n, std::string& out) {
  if (auto v = n.as_string()) return out = v->get(), true;
  return false;
}
bool read(const toml::node& n, std::vector<double>& out) {
  auto array = n.as_array();
  if (!array) return false;
  std::vector<double> values(array->size());
  for (size_t i = 0; i < array->size(); ++i)
    if (!read(*array->get(i), values[i])) return false;
  out = std::move(values);
  return true;
}

// What a node holds, for "got ...": arrays name their first offending element.
std::string got_name(const toml::node& n) {
  if (auto array = n.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) {
      auto t = array->get(i)->type();
      if (t != toml::node_type::integer && t != toml::node_type::floating_point)
        return str_cat("an array holding ", type_name(t), " at index ", i);
    }
  }
  return type_name(n.type());
}

size_t line_of(const toml::key& k, const toml::node& n) {
  return k.source().begin.line ? k.source().begin.line : n.source().begin.line;
}

// Where a key's value came from: the file and line, an override, or the default.
struct Origin {
  std::string where;
  size_t rank = 0;  // order of errors: file lines first, then overrides in command-line order
};

class Loader {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {
    origins_.assign(config_schema().size(), Origin{source_, 0});
  }

  void apply_document(const toml::table& root) {
    for (auto&& [name, node] : root) {
      Origin at{str_cat(source_, ":", line_of(name, node)), line_of(name, node)};
      const toml::table* table = node.as_table();
      if (!is_table(name.str())) {
        if (table) {
          apply_unknown_table(name.str(), at);
        } else {
          auto names = near_keys("", name.str());
          fail(at, str_cat("key '", name.str(), "' is outside any table; every key belongs to one of: ",
                           join(table_names(), ", "), names.empty() ? "" : did_you_mean(names)));
        }
        continue;
      }
      if (!table) {
        fail(at, str_cat("'", name.str(), "' must be a table ([", name.str(), "]), got ", type_name(node.type())));
        continue;
      }
      for (auto&& [key, value] : *table) {
        Origin key_at{str_cat(source_, ":", line_of(key, value)), line_of(key, value)};
        if (const KeySpec* spec = find_key(name.str(), key.str()))
          apply(*spec, value, key_at);
        else
          fail(key_at, unknown_key_message(name.str(), key.str()));
      }
    }
  }

  // `arg` is "table.key=value"; the value is TOML, or a bare word taken as a string.
  void apply_override(const std::string& arg, size_t index) {
    Origin at{"--set " + arg, kOverrideRank + index};
    size_t eq = arg.find('=');
    std::string path = trim(arg.substr(0, eq));
    size_t dot = path.find('.');
    if (eq == std::string::npos) return fail(at, "expected table.key=value, found no '='");
    if (dot == std::string::npos) {
      auto names = near_keys("", path);
      return fail(at, str_cat("'", path, "' names no table: expected table.key=value",
                              names.empty() ? "" : did_you_mean(names)));
    }
    std::string table = path.substr(0, dot), key = path.substr(dot + 1);
    const KeySpec* spec = find_key(table, key);
    if (!spec) return fail(at, unknown_key_message(table, key));
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

  // Ranges, choices and cross-key rules, on the final values (after every override).
  void validate() {
    const auto& schema = config_schema();
    for (size_t i = 0; i < schema.size(); ++i)
      std::visit([&](auto ref) { check(schema[i], ref(config_), origins_[i]); }, schema[i].field);
    const auto& d = config_.data;
    if (d.mean.size() != d.std.size() && !d.mean.empty() && !d.std.empty()) {
      const Origin& mean_at = origin_of("data", "mean");
      const Origin& std_at = origin_of("data", "std");
      fail(mean_at.rank > std_at.rank ? mean_at : std_at,
           str_cat("'data.mean' has ", d.mean.size(), " values but 'data.std' has ", d.std.size(),
                   ": give one of each per channel"));
    }
    for (const char* key : {"crop_scale", "crop_ratio"}) {
      const std::vector<double>& range = std::string_view(key) == "crop_scale" ? d.crop_scale : d.crop_ratio;
      if (range.size() != 2 || range[0] > range[1])
        fail(origin_of("data", key), str_cat("'data.", key, "' must be [lowest, highest], got ", range.size(),
                                             " value(s)", range.size() == 2 ? " in decreasing order" : ""));
    }
    if (d.source == "imagefolder" && d.channels != 1 && d.channels != 3)
      fail(origin_of("data", "channels"), str_cat("'data.channels' must be 1 or 3, got ", d.channels));
    if (d.source == "imagefolder" && static_cast<int64_t>(d.mean.size()) != d.channels)
      fail(origin_of("data", "mean"),
           str_cat("'data.mean' has ", d.mean.size(), " value(s) but data.channels = ", d.channels,
                   d.channels == 3 ? " (ImageNet's: mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225])" : ""));
  }

  Config finish() {
    if (errors_.empty()) return config_;
    std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string message;
    for (const auto& [rank, text] : errors_) message += (message.empty() ? "" : "\n") + text;
    throw Error(message);
  }

 private:
  static constexpr size_t kOverrideRank = size_t{1} << 40;

  void fail(const Origin& at, const std::string& message) {
    errors_.emplace_back(at.rank, str_cat(at.where, ": ", message));
  }

  const Origin& origin_of(std::string_view table, std::string_view key) const {
    const KeySpec* spec = find_key(table, key);
    RT_ASSERT(spec);
    return origins_[static_cast<size_t>(spec - config_schema().data())];
  }

  void apply(const KeySpec& spec, const toml::node& node, const Origin& at) {
    std::visit(
        [&](auto ref) {
          auto& field = ref(config_);
          if (!read(node, field)) {
            fail(at, str_cat("'", full_name(spec), "' expects ", expected_name(&field), ", got ", got_name(node)));
            return;
          }
          origins_[static_cast<size_t>(&spec - config_schema().data())] = at;
        },
        spec.field);
  }

  void apply_unknown_table(std::string_view name, const Origin& at) {
    std::vector<std::string> near;
    for (std::string_view t : table_names())
      if (closeness(name, t)) near.push_back(str_cat(t));
    fail(at, str_cat("unknown table '", name, "'",
                     near.empty() ? str_cat(" (tables are: ", join(table_names(), ", "), ")") : did_you_mean(near)));
  }

  void check(const KeySpec&, bool, const Origin&) {}

  void check(const KeySpec& spec, int64_t v, const Origin& at) {
    if (!within(spec.bound, static_cast<double>(v)))
      fail(at, str_cat("'", full_name(spec), "' = ", v, " is out of range: expected ", describe(spec.bound)));
  }

  void check(const KeySpec& spec, double v, const Origin& at, std::string_view suffix = "") {
    std::string name = str_cat("'", full_name(spec), suffix, "' = ", format_value(v));
    if (!std::isfinite(v))
      fail(at, name + " is not a finite number");
    else if (!within(spec.bound, v))
      fail(at, str_cat(name, " is out of range: expected ", describe(spec.bound)));
  }

  void check(const KeySpec& spec, const std::string& v, const Origin& at) {
    if (spec.non_empty && v.empty()) fail(at, str_cat("'", full_name(spec), "' must not be empty"));
    if (spec.choices.empty() || std::find(spec.choices.begin(), spec.choices.end(), v) != spec.choices.end()) return;
    std::vector<std::string> near;
    for (std::string_view c : spec.choices)  // stricter than for keys: "gpu" must not suggest "cpu"
      if (edit_distance(v, c) * 4 <= v.size()) near.push_back(str_cat(c));
    fail(at, str_cat("'", full_name(spec), "' = ", format_value(v), " is not one of: ", join(spec.choices, ", "),
                     near.empty() ? "" : did_you_mean(near)));
  }

  void check(const KeySpec& spec, const std::vector<double>& v, const Origin& at) {
    if (spec.non_empty && v.empty()) fail(at, str_cat("'", full_name(spec), "' must hold at least one value"));
    for (size_t i = 0; i < v.size(); ++i) check(spec, v[i], at, str_cat("[", i, "]"));
    for (size_t i = 1; i < v.size(); ++i) {
      if (spec.increasing && !(v[i - 1] < v[i])) {
        fail(at, str_cat("'", full_name(spec), "' = ", format_value(v), " must be strictly increasing"));
        break;
      }
    }
  }

  static std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }

  // A word that TOML would not misread: no spaces, quotes, brackets, braces, commas, '=' or '#'.
  static bool is_bare_word(const std::string& s) { return s.find_first_of(" \t\r\n\"'[]{},=#\\") == std::string::npos; }

  std::string source_;
  Config config_;
  std::vector<Origin> origins_;                         // indexed like config_schema()
  std::vector<std::pair<size_t, std::string>> errors_;  // (rank, "where: message")
};

}  // namespace

Config parse_config(const std::string& text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw Error(str_cat(source_name, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description()));
  }
  Loader loader(source_name);
  loader.apply_document(root);
  for (size_t i = 0; i < overrides.size(); ++i) loader.apply_override(overrides[i], i);
  loader.validate();
  return loader.finish();
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(str_cat("cannot read config '", path, "': ", std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  int read_errno = std::ferror(f) ? errno : 0;  // a directory opens but fails here (EISDIR)
  std::fclose(f);
  if (read_errno) throw Error(str_cat("cannot read config '", path, "': ", std::strerror(read_errno)));
  return parse_config(text, path, overrides);
}

std::string to_toml(const Config& config) {
  Config c = config;  // the schema hands out references into a mutable Config
  std::string out = "# ringtrain configuration, fully resolved: every key, defaults included.\n";
  std::string_view table;
  std::vector<std::pair<std::string, std::string>> lines;  // ("key = value", comment) of a table
  auto flush = [&] {
    size_t width = 0;
    for (const auto& [kv, _] : lines) width = std::max(width, std::min<size_t>(kv.size(), 40));
    for (const auto& [kv, comment] : lines)
      out += str_cat(kv, std::string(width > kv.size() ? width - kv.size() : 0, ' '), "  # ", comment, "\n");
    lines.clear();
  };
  for (const KeySpec& spec : config_schema()) {
    if (spec.table != table) {
      flush();
      table = spec.table;
      out += str_cat("\n[", table, "]\n");
    }
    std::string value = std::visit([&](auto ref) { return format_value(ref(c)); }, spec.field);
    std::string rule = !spec.choices.empty() ? str_cat("one of: ", join(spec.choices, ", ")) : describe(spec.bound);
    if (std::holds_alternative<FieldRef<std::vector<double>>>(spec.field)) {
      if (!rule.empty()) rule = "each " + rule;
      if (spec.increasing) rule += ", strictly increasing";
    }
    lines.emplace_back(str_cat(spec.key, " = ", value),
                       rule.empty() ? std::string(spec.doc) : str_cat(spec.doc, " (", rule, ")"));
  }
  flush();
  return out;
}

}  // namespace rt
