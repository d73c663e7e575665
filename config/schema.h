// A key schema for a strict TOML file: one entry per key naming its table ("" = the top level),
// where its value lives in the Root struct the file loads into, what values are valid and a
// one-line doc. config/schema_loader.h loads any Root by its schema: the run configuration
// (config/config_schema.h) and the simulator's cluster files (tools/cluster_file.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/named_enum.h"

namespace rt {

// A table of numbers under names the schema does not know in advance (the cluster file's
// compute.images_per_s, one figure per model).
using NumberTable = std::map<std::string, double>;

// An enum key's value (base/named_enum.h) seen through its name table: the file spells it as a
// string of the table, and the key's choices are the table.
struct EnumRef {
  void* target;
  std::span<const std::string_view> names;
  size_t (*get)(const void* target);
  void (*set)(void* target, size_t value);

  std::string_view name() const { return names[get(target)]; }
  // Sets the value spelled `name`; false, the value as it was, where no value is.
  bool set_named(std::string_view name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return set(target, i), true;
    return false;
  }
};

// Where one key's value lives: a function handing out a reference into the Root (an EnumRef for
// an enum key).
template <typename Root, typename T>
using FieldOf = T& (*)(Root&);
template <typename Root>
using EnumFieldOf = EnumRef (*)(Root&);
template <typename Root>
using AnyFieldOf =
    std::variant<FieldOf<Root, bool>, FieldOf<Root, int64_t>, FieldOf<Root, double>, FieldOf<Root, std::string>,
                 FieldOf<Root, std::vector<double>>, FieldOf<Root, NumberTable>, EnumFieldOf<Root>>;

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
// The same for a key whose member is an enum with a name table.
template <auto kTable, auto kField>
EnumRef enum_member(typename ClassOf<decltype(kTable)>::type& root) {
  using E = std::remove_reference_t<decltype((root.*kTable).*kField)>;
  return {&((root.*kTable).*kField), names_of<E>(),
          [](const void* p) { return static_cast<size_t>(*static_cast<const E*>(p)); },
          [](void* p, size_t v) { *static_cast<E*>(p) = static_cast<E>(v); }};
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

// Aliases. The constructors are spelled out because GCC 12 crashes (in
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
  bool non_empty = false;      // strings, arrays and number tables
  bool increasing = false;     // arrays: strictly increasing
  NameList also = NameList();  // names other tools use; only for "did you mean"
  bool required = false;       // the file must give it (no default)
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
