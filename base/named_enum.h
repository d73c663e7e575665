// Enums whose values a config file spells as words: one name table each (EnumNames, specialised
// beside the enum), and one pair of conversions through it. The config's schema takes such a
// key's choices from the same table, so a value has one spelling everywhere.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace rt {

// Specialised for each enum E: `static constexpr std::array<std::string_view, N> names`, in
// enumerator order (the enumerators are 0 .. N-1).
template <typename E>
struct EnumNames;

template <typename E>
constexpr const auto& names_of() {
  return EnumNames<E>::names;
}

template <typename E>
constexpr std::string_view name_of(E value) {
  return EnumNames<E>::names[static_cast<size_t>(value)];
}

// The value spelled `name`; nothing where no value is.
template <typename E>
constexpr std::optional<E> enum_named(std::string_view name) {
  for (size_t i = 0; i < EnumNames<E>::names.size(); ++i)
    if (EnumNames<E>::names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace rt
