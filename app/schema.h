// A key schema for a strict TOML file: one entry per key naming its table ("" = the top level),
// where its value lives in the Root struct the file loads into, what values are valid and a
// one-line doc. app/schema_loader.h loads any Root by its schema: the run configuration
// (app/config_schema.h) and the simulator's cluster files (tools/cluster_file.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rt {

// A table of numbers under names the schema does not know in advance (the cluster file's
// compute.images_per_s, one figure per model).
using NumberTable = std::map<std::string, double>;

// Where one key's value lives: a function handing out a reference into the Root.
template <typename Root, typename T>
using FieldOf = T& (*)(Root&);
template <typename Root>
using AnyFieldOf =
    std::variant<FieldOf<Root, bool>, FieldOf<Root, int64_t>, FieldOf<Root, double>, FieldOf<Root, std::string>,
                 FieldOf<Root, std::vector<double>>, FieldOf<Root, NumberTable>>;

// FieldOf accessors for a schema: member<&Root::table, &Table::key> for a key in a table,
// member<&Root::key> for one at the top level. Root is read off the first member pointer.
template <typename MemberPointer>
struct ClassOf;
template <typename T, typename C>
struct ClassOf<T C::*> {
  using type = C;
};
template <auto kTable, auto kField>
auto& member(typename ClassOf<decltype(kTable)>::type& root) {
  return (root.*kTable).*kField;
}
template <auto kField>
auto& member(typename ClassOf<decltype(kField)>::type& root) {
  return root.*kField;
}

// Valid numbers (for arrays and number tables: each element). Infinite bounds are not printed.
inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();
struct Bound {
  double lo = -kUnbounded;
  double hi = kUnbounded;
  bool lo_open = false;
  bool hi_open = false;
};
constexpr Bound at_least(double lo) { return {.lo = lo}; }
constexpr Bound above(double lo) { return {.lo = lo, .lo_open = true}; }
constexpr Bound unit_open_top() { return {.lo = 0, .hi = 1, .hi_open = true}; }  // [0, 1)

// Allowed values or aliases. The constructors are spelled out because GCC 12 crashes (in
// nothrow_spec_p) on a std::vector member initialiser of a class template.
struct NameList : std::vector<std::string_view> {
  NameList() {}
  NameList(std::initializer_list<std::string_view> names) : std::vector<std::string_view>(names) {}
};

template <typename Root>
struct KeySpecOf {
  std::string_view table;  // "" = the top level
  std::string_view key;
  AnyFieldOf<Root> field;
  std::string_view doc;
  Bound bound{};
  NameList choices = NameList();  // strings: the allowed values; empty = any
  bool non_empty = false;         // strings, arrays and number tables
  bool increasing = false;        // arrays: strictly increasing
  NameList also = NameList();     // names other tools use; only for "did you mean"
  bool required = false;          // the file must give it (no default)
};

template <typename Root>
using SchemaOf = std::vector<KeySpecOf<Root>>;

// The tables in schema order ("" not among them).
template <typename Root>
std::vector<std::string_view> table_names(const SchemaOf<Root>& schema) {
  std::vector<std::string_view> names;
  for (const auto& s : schema)
    if (!s.table.empty() && std::find(names.begin(), names.end(), s.table) == names.end()) names.push_back(s.table);
  return names;
}

template <typename Root>
bool is_table(const SchemaOf<Root>& schema, std::string_view name) {
  const auto names = table_names(schema);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The entry for table.key, or nullptr.
template <typename Root>
const KeySpecOf<Root>* find_key(const SchemaOf<Root>& schema, std::string_view table, std::string_view key) {
  for (const auto& s : schema)
    if (s.table == table && s.key == key) return &s;
  return nullptr;
}

// "table.key" (or "key" at the top level), as messages name it.
inline std::string full_name(std::string_view table, std::string_view key) {
  return table.empty() ? std::string(key) : std::string(table) + "." + std::string(key);
}
template <typename Root>
std::string full_name(const KeySpecOf<Root>& s) {
  return full_name(s.table, s.key);
}

}  // namespace rt
