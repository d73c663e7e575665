// The documentation's key tables against the config schema (config/config_schema.h) and the defaults
// to_toml prints, so that what users read about keys follows the code:
// - docs/config.md's row per `[table]` names exactly the table's keys, and a key with choices lists
//   them all, and nothing else, in backticks in the parentheses after its name;
// - every "| key | default | meaning |" table under docs/ names real keys (`table.key`, or a bare
//   key under a heading that names `[table]`, which then lists all of the table's keys) with the
//   default to_toml(Config{}) prints;
// - every table of a key's values under docs/ (its first column `value` or the key's own name,
//   the key named in the paragraph just before) lists exactly the key's choices, and the one
//   marked "(default)" is the default.
// Keys are compared by the schema's table and key names, defaults and choices by what to_toml
// prints ("key = value  # doc (one of: a, b)"), never by the C++ types behind them. A failure names
// the file, the line, the key and what the config says.
#include "config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "base/join.h"
#include "config/config_schema.h"

namespace rt {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = RT_SOURCE_DIR;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// ---- The schema and the printed defaults ----

const KeySpec* find_key(std::string_view table, std::string_view key) {
  for (const KeySpec& spec : config_schema())
    if (spec.table == table && spec.key == key) return &spec;
  return nullptr;
}

// "table.key" (a reference in backticks, perhaps followed by " = value") split in two, where the
// table is one of the schema's; nullopt otherwise.
std::optional<std::pair<std::string, std::string>> dotted_key(std::string_view text) {
  text = text.substr(0, std::min(text.find_first_of(" ="), text.size()));
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos || !is_table(config_schema(), text.substr(0, dot))) return std::nullopt;
  return std::pair{std::string(text.substr(0, dot)), std::string(text.substr(dot + 1))};
}

// The TOML value at the start of `s` ("\"a # b\"", "[1.0, 2.0]", "25.0"), without what follows it.
std::string leading_value(std::string_view s) {
  s = trim(s);
  if (s.empty()) return "";
  size_t end = 0;
  if (s[0] == '"') {
    for (end = 1; end < s.size() && s[end] != '"'; ++end)
      if (s[end] == '\\') ++end;
    ++end;
  } else if (s[0] == '[' || s[0] == '{') {
    int depth = 0;
    bool quoted = false;
    for (; end < s.size(); ++end) {
      const char c = s[end];
      if (quoted) {
        if (c == '\\') ++end;
        if (c == '"') quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && --depth == 0) {
        ++end;
        break;
      }
    }
  } else {
    end = std::min(s.find_first_of(" \t#"), s.size());
  }
  return std::string(s.substr(0, std::min(end, s.size())));
}

// A key as to_toml(Config{}) prints it: "allreduce = \"ring\"  # ... (one of: ring, mpi, nccl)".
struct Printed {
  std::string value;                 // "\"ring\"", "25.0", "[0.286]"
  std::vector<std::string> choices;  // from "(one of: ...)" at the end of the comment; empty = any
};

// Every key as to_toml(Config{}) prints it, by "table.key".
const std::map<std::string, Printed>& printed_keys() {
  static const std::map<std::string, Printed> keys = [] {
    std::map<std::string, Printed> out;
    std::istringstream in(to_toml(Config{}));
    std::string line, table;
    while (std::getline(in, line)) {
      const std::string_view l = trim(line);
      if (l.empty() || l[0] == '#') continue;
      if (l[0] == '[') {
        table = std::string(l.substr(1, l.find(']') - 1));
        continue;
      }
      const size_t eq = l.find(" = ");
      if (eq == std::string_view::npos) continue;
      Printed& p = out[table + "." + std::string(trim(l.substr(0, eq)))];
      p.value = leading_value(l.substr(eq + 3));
      const std::string_view rest = l.substr(eq + 3 + p.value.size());
      if (const size_t at = rest.rfind("(one of: "); at != std::string_view::npos) {
        std::string_view list = rest.substr(at + 9);
        list = list.substr(0, list.find(')'));
        for (size_t start = 0; start <= list.size();) {
          const size_t comma = std::min(list.find(',', start), list.size());
          p.choices.emplace_back(trim(list.substr(start, comma - start)));
          start = comma + 1;
        }
      }
    }
    return out;
  }();
  return keys;
}

const Printed& printed(std::string_view table, std::string_view key) {
  return printed_keys().at(str_cat(table, ".", key));
}

// ---- Comparing TOML values as text ----

// A TOML number ("1", "25.0", "5e-4", "178_956_970", "+3"), or nullopt.
std::optional<double> toml_number(std::string_view s) {
  std::string digits;
  for (char c : s)
    if (c != '_') digits += c;
  if (!digits.empty() && digits[0] == '+') digits.erase(0, 1);
  if (digits.empty() || !(std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '-')) return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// The elements of an array's inside ("1.0, 2.0"), split at the commas outside strings.
std::vector<std::string_view> array_elements(std::string_view inside) {
  std::vector<std::string_view> out;
  if (trim(inside).empty()) return out;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    if (quoted && inside[i] == '\\') {
      ++i;
    } else if (inside[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && inside[i] == ',') {
      out.push_back(trim(inside.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(inside.substr(start)).empty()) out.push_back(trim(inside.substr(start)));
  return out;
}

// Whether two TOML values, as text, are the same value: numbers as numbers (1, 1.0 and 1e0 are
// equal), arrays element by element, everything else (strings with their quotes, booleans) as the
// exact text, so `ring` is not `"ring"` and `"25"` is not `25.0`.
bool same_value(std::string_view a, std::string_view b) {
  a = trim(a);
  b = trim(b);
  const auto x = toml_number(a), y = toml_number(b);
  if (x && y) return *x == *y;
  if (a.size() >= 2 && b.size() >= 2 && a.front() == '[' && b.front() == '[' && a.back() == ']' && b.back() == ']') {
    const auto xs = array_elements(a.substr(1, a.size() - 2)), ys = array_elements(b.substr(1, b.size() - 2));
    if (xs.size() != ys.size()) return false;
    for (size_t i = 0; i < xs.size(); ++i)
      if (!same_value(xs[i], ys[i])) return false;
    return true;
  }
  return a == b;
}

// ---- Markdown ----

// The spans in backticks of a piece of Markdown, with where each starts.
struct Span {
  size_t at;
  std::string text;
};

std::vector<Span> code_spans(std::string_view s) {
  std::vector<Span> out;
  for (size_t i = s.find('`'); i != std::string_view::npos; i = s.find('`', i)) {
    const size_t close = s.find('`', i + 1);
    if (close == std::string_view::npos) break;
    out.push_back({i, std::string(s.substr(i + 1, close - i - 1))});
    i = close + 1;
  }
  return out;
}

// A table row's cells, trimmed; a `|` inside backticks stays in its cell.
std::vector<std::string> cells(std::string_view row) {
  row = trim(row);
  if (!row.empty() && row.front() == '|') row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  std::vector<std::string> out;
  bool code = false;
  size_t start = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '`') code = !code;
    if (row[i] == '|' && !code && (i == 0 || row[i - 1] != '\\')) {
      out.emplace_back(trim(row.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.emplace_back(trim(row.substr(start)));
  return out;
}

bool is_table_line(std::string_view line) { return trim(line).starts_with('|'); }

bool is_separator(const std::vector<std::string>& row) {
  return std::all_of(row.begin(), row.end(), [](const std::string& c) {
    return c.find('-') != std::string::npos && c.find_first_not_of("-: ") == std::string::npos;
  });
}

struct Row {
  int line;  // 1-based
  std::vector<std::string> cells;
};

struct Table {
  std::string file;  // relative to the source folder
  int line;          // the header's
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::string heading;    // the nearest heading above
  std::string paragraph;  // the paragraph right above (blank lines between allowed)
};

struct MarkdownFile {
  std::string name;  // relative to the source folder
  std::vector<std::string> lines;
  std::vector<bool> fenced;  // inside a ``` block
};

MarkdownFile read_markdown(const fs::path& path) {
  MarkdownFile md{fs::relative(path, kSource).generic_string(), {}, {}};
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::string line;
  bool fence = false;
  while (std::getline(in, line)) {
    const std::string_view t = trim(line);
    const bool marker = t.starts_with("```") || t.starts_with("~~~");
    md.fenced.push_back(fence || marker);
    if (marker) fence = !fence;
    md.lines.push_back(line);
  }
  return md;
}

std::vector<Table> tables_of(const MarkdownFile& md) {
  std::vector<Table> out;
  for (size_t i = 0; i + 1 < md.lines.size(); ++i) {
    if (md.fenced[i] || !is_table_line(md.lines[i]) || (i > 0 && is_table_line(md.lines[i - 1]))) continue;
    if (!is_separator(cells(md.lines[i + 1]))) continue;
    Table t{md.name, static_cast<int>(i + 1), cells(md.lines[i]), {}, "", ""};
    for (size_t j = i + 2; j < md.lines.size() && is_table_line(md.lines[j]) && !md.fenced[j]; ++j)
      t.rows.push_back({static_cast<int>(j + 1), cells(md.lines[j])});
    for (size_t j = i; j-- > 0;) {
      if (!md.fenced[j] && md.lines[j].starts_with('#')) {
        t.heading = md.lines[j];
        break;
      }
    }
    std::vector<std::string> above;
    size_t j = i;
    while (j > 0 && trim(md.lines[j - 1]).empty()) --j;
    for (; j-- > 0 && !trim(md.lines[j]).empty() && !md.lines[j].starts_with('#');)
      above.insert(above.begin(), md.lines[j]);
    t.paragraph = join(above, " ");
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<MarkdownFile> docs_markdown() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "docs"))
    if (entry.is_regular_file() && entry.path().extension() == ".md") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<MarkdownFile> out;
  for (const auto& p : paths) out.push_back(read_markdown(p));
  return out;
}

std::string where(const std::string& file, int line) { return file + ":" + std::to_string(line) + ": "; }

// ---- docs/config.md's rows of keys ----

// One `[table]` row: the keys at the top level of its second cell, each with the spans in backticks
// inside the parentheses that follow it.
struct ReadmeRow {
  int line;
  std::string table;
  std::vector<std::pair<std::string, std::vector<std::string>>> keys;
};

std::vector<ReadmeRow> readme_rows() {
  const MarkdownFile md = read_markdown(kSource / "docs/config.md");
  std::vector<ReadmeRow> out;
  for (size_t i = 0; i < md.lines.size(); ++i) {
    if (md.fenced[i] || !is_table_line(md.lines[i])) continue;
    const auto row = cells(md.lines[i]);
    if (row.size() < 2 || !row[0].starts_with("`[") || !row[0].ends_with("]`")) continue;
    ReadmeRow r{static_cast<int>(i + 1), row[0].substr(2, row[0].size() - 4), {}};
    const std::string& list = row[1];
    int depth = 0;
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k] == '`') {
        const size_t close = list.find('`', k + 1);
        if (close == std::string::npos) break;
        std::string span = list.substr(k + 1, close - k - 1);
        if (depth == 0)
          r.keys.push_back({std::move(span), {}});
        else if (!r.keys.empty())
          r.keys.back().second.push_back(std::move(span));
        k = close;
      } else if (list[k] == '(') {
        ++depth;
      } else if (list[k] == ')' && depth > 0) {
        --depth;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---- The checks' own pieces ----

TEST(ConfigDocs, ValuesCompareAsTomlValues) {
  EXPECT_TRUE(same_value("1", "1.0"));
  EXPECT_TRUE(same_value("25", "25.0"));
  EXPECT_TRUE(same_value("5e-4", "0.0005"));
  EXPECT_TRUE(same_value("178_956_970", "178956970"));
  EXPECT_TRUE(same_value("\"ring\"", " \"ring\" "));
  EXPECT_TRUE(same_value("[0.08, 1]", "[0.08, 1.0]"));
  EXPECT_TRUE(same_value("[]", "[]"));
  EXPECT_FALSE(same_value("25.0", "30.0"));
  EXPECT_FALSE(same_value("ring", "\"ring\""));
  EXPECT_FALSE(same_value("\"25\"", "25.0"));
  EXPECT_FALSE(same_value("\"Ring\"", "\"ring\""));
  EXPECT_FALSE(same_value("true", "1"));
  EXPECT_FALSE(same_value("[1.0]", "[1.0, 2.0]"));
  EXPECT_EQ(leading_value("\"a # b\"  # doc"), "\"a # b\"");
  EXPECT_EQ(leading_value("[0.08, 1.0]  # doc"), "[0.08, 1.0]");
  EXPECT_EQ(leading_value("25.0   # doc"), "25.0");
}

TEST(ConfigDocs, EveryKeyIsPrintedWithItsDefaultAndChoices) {
  const auto& keys = printed_keys();
  EXPECT_EQ(keys.size(), config_schema().size());
  for (const KeySpec& spec : config_schema()) {
    const auto it = keys.find(str_cat(spec.table, ".", spec.key));
    if (it == keys.end()) {
      ADD_FAILURE() << spec.table << "." << spec.key << " not found in to_toml(Config{})";
    } else if (const auto* field = std::get_if<EnumFieldOf<Config>>(&spec.field)) {
      Config c;
      const EnumRef ref = (*field)(c);
      EXPECT_EQ(it->second.choices, std::vector<std::string>(ref.names.begin(), ref.names.end()))
          << spec.table << "." << spec.key;
    }
  }
  EXPECT_EQ(keys.at("dist.allreduce").value, "\"ring\"");
  EXPECT_EQ(keys.at("dist.allreduce").choices, (std::vector<std::string>{"ring", "mpi", "nccl"}));
  EXPECT_EQ(keys.at("dist.bucket_mb").value, "25.0");
  EXPECT_TRUE(keys.at("dist.bucket_mb").choices.empty());
  EXPECT_EQ(keys.at("checkpoint.every_epochs").value, "1");
  EXPECT_EQ(keys.at("checkpoint.signals").value, "\"SIGTERM,SIGUSR1\"");
}

// ---- docs/config.md ----

TEST(ConfigDocs, KeyTableNamesEveryKeyOfEveryTable) {
  const auto rows = readme_rows();
  std::set<std::string> tables_seen;
  for (const ReadmeRow& row : rows) {
    const std::string at = where("docs/config.md", row.line);
    if (!is_table(config_schema(), row.table)) {
      ADD_FAILURE() << at << "[" << row.table << "] is not a table of the config";
      continue;
    }
    if (!tables_seen.insert(row.table).second) ADD_FAILURE() << at << "[" << row.table << "] has a second row";
    std::set<std::string> named;
    for (const auto& [key, values] : row.keys) {
      if (!find_key(row.table, key))
        ADD_FAILURE() << at << "[" << row.table << "] names `" << key << "`, which is not a key of the table";
      else if (!named.insert(key).second)
        ADD_FAILURE() << at << row.table << "." << key << " is named twice";
      // References to other keys in the parentheses, such as `dist.sharded_update`, exist.
      for (const std::string& v : values)
        if (const auto ref = dotted_key(v); ref && !find_key(ref->first, ref->second))
          ADD_FAILURE() << at << row.table << "." << key << ": `" << v << "` is not a config key";
    }
    for (const KeySpec& spec : config_schema())
      if (spec.table == row.table && !named.count(std::string(spec.key)))
        ADD_FAILURE() << at << spec.table << "." << spec.key << " is missing from the row of [" << row.table
                      << "] (every key of the table is named there)";
  }
  for (std::string_view table : table_names(config_schema()))
    EXPECT_TRUE(tables_seen.count(std::string(table)))
        << "docs/config.md: no row `[" << table << "]` in the table of config keys";
}

TEST(ConfigDocs, KeyTableListsTheChoicesOfEveryKeyWithChoices) {
  for (const ReadmeRow& row : readme_rows()) {
    const std::string at = where("docs/config.md", row.line);
    for (const auto& [key, values] : row.keys) {
      if (!find_key(row.table, key)) continue;
      const auto& choices = printed(row.table, key).choices;
      if (choices.empty()) continue;
      for (const std::string& v : values)
        if (std::find(choices.begin(), choices.end(), v) == choices.end())
          ADD_FAILURE() << at << row.table << "." << key << ": `" << v
                        << "` in the parentheses is not one of its values (" << join(choices, ", ") << ")";
      for (const std::string& c : choices)
        if (std::find(values.begin(), values.end(), c) == values.end())
          ADD_FAILURE() << at << row.table << "." << key << ": its value `" << c
                        << "` is not listed in the parentheses after it (a key with choices lists them all)";
    }
  }
}

// ---- docs/ ----

// The `[table]` a heading names, where it names one of the config's.
std::string table_of_heading(const std::string& heading) {
  for (const Span& s : code_spans(heading))
    if (s.text.size() > 2 && s.text.front() == '[' && s.text.back() == ']' &&
        is_table(config_schema(), std::string_view(s.text).substr(1, s.text.size() - 2)))
      return s.text.substr(1, s.text.size() - 2);
  return "";
}

// A cell's text without the backticks around it, where one span is all of it.
std::string unquoted_cell(const std::string& cell) {
  const auto spans = code_spans(cell);
  if (spans.size() == 1 && spans[0].at == 0 && spans[0].text.size() + 2 == cell.size()) return spans[0].text;
  return cell;
}

TEST(ConfigDocs, KeyTablesInDocsGiveTheDefaults) {
  int tables = 0;
  for (const MarkdownFile& md : docs_markdown()) {
    for (const Table& t : tables_of(md)) {
      const auto default_at = std::find(t.header.begin(), t.header.end(), "default");
      if (t.header.empty() || t.header[0] != "key" || default_at == t.header.end()) continue;
      ++tables;
      const size_t column = default_at - t.header.begin();
      const std::string section_table = table_of_heading(t.heading);
      std::set<std::string> bare;  // the section's table's keys named without it
      for (const Row& row : t.rows) {
        const std::string at = where(t.file, row.line);
        if (row.cells.size() <= column) {
          ADD_FAILURE() << at << "a row of " << row.cells.size() << " cells, the default is in column " << column + 1;
          continue;
        }
        const std::string name = unquoted_cell(row.cells[0]);
        std::string table, key;
        if (const auto ref = dotted_key(name)) {
          std::tie(table, key) = *ref;
        } else if (!section_table.empty()) {
          table = section_table;
          key = name;
          bare.insert(key);
        } else {
          ADD_FAILURE() << at << "`" << name << "`: which table? Write it as `table.key`, or name the `[table]` in "
                        << "the section's heading";
          continue;
        }
        if (!find_key(table, key)) {
          ADD_FAILURE() << at << table << "." << key << " is not a config key";
          continue;
        }
        const std::string documented = unquoted_cell(row.cells[column]);
        const std::string& value = printed(table, key).value;
        if (!same_value(documented, value))
          ADD_FAILURE() << at << table << "." << key << ": default " << documented << " in the docs, " << value
                        << " in the config";
      }
      // A table of bare keys under a heading that names [T] documents the table: all of its keys.
      if (!bare.empty())
        for (const KeySpec& spec : config_schema())
          if (spec.table == section_table && !bare.count(std::string(spec.key)))
            ADD_FAILURE() << where(t.file, t.line) << spec.table << "." << spec.key << " is missing from the table "
                          << "of the section \"" << t.heading << "\"";
    }
  }
  EXPECT_GE(tables, 3) << "found too few \"| key | default | meaning |\" tables under docs/: has their form changed?";
}

// The key with choices that the paragraph names last, in backticks as `table.key` (or `table.key = ...`).
const KeySpec* key_of_paragraph(const std::string& paragraph) {
  const KeySpec* found = nullptr;
  for (const Span& s : code_spans(paragraph))
    if (const auto ref = dotted_key(s.text))
      if (const KeySpec* spec = find_key(ref->first, ref->second);
          spec && !printed(spec->table, spec->key).choices.empty())
        found = spec;
  return found;
}

TEST(ConfigDocs, ValueTablesInDocsListTheChoices) {
  int tables = 0;
  for (const MarkdownFile& md : docs_markdown()) {
    for (const Table& t : tables_of(md)) {
      if (t.header.empty()) continue;
      const KeySpec* spec = key_of_paragraph(t.paragraph);
      if (t.header[0] == "value" && !spec) {
        ADD_FAILURE() << where(t.file, t.line) << "a table of values, but the paragraph above names no key with "
                      << "choices (as `table.key`)";
        continue;
      }
      if (!spec || (t.header[0] != "value" && t.header[0] != spec->key)) continue;
      ++tables;
      const auto& [default_value, choices] = printed(spec->table, spec->key);
      const std::string name = str_cat(spec->table, ".", spec->key);
      std::set<std::string> listed;
      for (const Row& row : t.rows) {
        const std::string at = where(t.file, row.line);
        const auto spans = code_spans(row.cells[0]);
        if (spans.empty() || spans[0].at != 0) {
          ADD_FAILURE() << at << name << ": the row starts with no value in backticks: " << row.cells[0];
          continue;
        }
        const std::string& value = spans[0].text;
        if (std::find(choices.begin(), choices.end(), value) == choices.end())
          ADD_FAILURE() << at << name << ": `" << value << "` is not one of its values (" << join(choices, ", ") << ")";
        listed.insert(value);
        const bool marked = row.cells[0].find("default)") != std::string::npos;
        if (marked && default_value != "\"" + value + "\"")
          ADD_FAILURE() << at << name << ": default `" << value << "` in the docs, " << default_value
                        << " in the config";
      }
      for (const std::string& c : choices)
        if (!listed.count(c)) ADD_FAILURE() << where(t.file, t.line) << name << ": its value `" << c << "` has no row";
    }
  }
  EXPECT_GE(tables, 2) << "found too few tables of a key's values under docs/: has their form changed?";
}

}  // namespace
}  // namespace rt
