// "Did you mean": which schema names, or allowed values, are close to a name the user wrote, so
// that an unknown key, table or choice can be answered with the likely intended one. Pure string
// work over a key schema (config/schema.h); used by config/schema_loader.h for its error messages.
#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/join.h"
#include "config/schema.h"

namespace rt::suggest {

// Optimal string alignment distance: edits, with a swap of two neighbours counting as one.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// How far `typed` is from `name`, or nothing when too far to suggest. Short names allow fewer
// edits so that "foo" does not suggest "dir"; a containment ("batch" in "batch_per_rank") ranks
// after every close spelling.
inline std::optional<size_t> closeness(std::string_view typed, std::string_view name) {
  size_t d = edit_distance(typed, name);
  if (d <= std::clamp<size_t>(typed.size() / 3, 1, 3)) return d;
  bool long_enough = std::min(typed.size(), name.size()) >= 3;
  if (long_enough && (name.find(typed) != name.npos || typed.find(name) != typed.npos)) return 4;
  return std::nullopt;
}

template <typename Root>
std::optional<size_t> closeness(std::string_view typed, const KeySpecOf<Root>& spec) {
  std::optional<size_t> best = closeness(typed, spec.key);
  for (std::string_view alias : spec.also) {
    auto c = closeness(typed, alias);
    if (c && (!best || *c < *best)) best = c;
  }
  return best;
}

// The closest key of `table` to `key` scoring at most `limit` (see closeness), if any.
template <typename Root>
const KeySpecOf<Root>* nearest_in_table(const SchemaOf<Root>& schema, std::string_view table, std::string_view key,
                                        size_t limit) {
  const KeySpecOf<Root>* best = nullptr;
  size_t best_score = 0;
  for (const auto& s : schema) {
    if (s.table != table) continue;
    auto c = closeness(key, s);
    if (c && *c <= limit && (!best || *c < best_score)) best = &s, best_score = *c;
  }
  return best;
}

// "table.key" names to offer for an unknown `table.key`, most likely first: a respelling in the
// same table; else a key of the table containing it ("batch" -> batch_per_rank) and the same key
// in other tables ("train.dir" -> data.dir, checkpoint.dir); else the nearest key of a near
// table, or of any table when none was given ("trian.epoch" -> train.epochs).
template <typename Root>
std::vector<std::string> near_keys(const SchemaOf<Root>& schema, std::string_view table, std::string_view key) {
  if (const auto* s = nearest_in_table(schema, table, key, 3)) return {full_name(*s)};
  std::vector<std::string> found;
  if (const auto* s = nearest_in_table(schema, table, key, 4)) found.push_back(full_name(*s));
  for (const auto& s : schema) {
    bool same = s.key == key || std::find(s.also.begin(), s.also.end(), key) != s.also.end();
    if (same) found.push_back(full_name(s));
  }
  if (!found.empty()) return found;
  const KeySpecOf<Root>* best = nullptr;
  size_t best_score = 0;
  for (const auto& s : schema) {
    if (!table.empty() && !closeness(table, s.table)) continue;
    auto c = closeness(key, s);
    if (c && (!best || *c < best_score)) best = &s, best_score = *c;
  }
  if (best) return {full_name(*best)};
  return {};
}

inline std::string did_you_mean(const std::vector<std::string>& names) {
  std::string out = " (did you mean ";
  for (size_t i = 0; i < names.size(); ++i)
    out += str_cat(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", "'", names[i], "'");
  return out + "?)";
}

template <typename Root>
std::string unknown_key_message(const SchemaOf<Root>& schema, std::string_view table, std::string_view key) {
  std::string message = str_cat("unknown key '", full_name(table, key), "'");
  auto names = near_keys(schema, table, key);
  if (!names.empty()) return message + did_you_mean(names);
  std::vector<std::string_view> keys;
  for (const auto& s : schema)
    if (s.table == table) keys.push_back(s.key);
  if (keys.empty()) return message + str_cat(" (tables are: ", join(table_names(schema), ", "), ")");
  return message + str_cat(table.empty() ? " (keys outside the tables are: " : str_cat(" (keys of [", table, "] are: "),
                           join(keys, ", "), ")");
}

}  // namespace rt::suggest
