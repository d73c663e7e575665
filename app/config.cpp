// Loading, validating and printing the run configuration, all driven by the schema in
// app/config_schema.h through app/schema_loader.h, plus the rules that tie keys together.
#include "app/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "app/config_schema.h"
#include "app/stop_signals.h"
#include "app/schema_loader.h"
#include "base/check.h"

namespace rt {
namespace {

using schema_detail::describe;
using schema_detail::format_value;
using suggest::join;

// The rules that tie keys together, on the final values (after every override).
void check_config_rules(SchemaLoader<Config>& loader) {
  try {
    parse_signal_list(loader.value().checkpoint.signals);
  } catch (const Error& e) {
    loader.fail(loader.origin_of("checkpoint", "signals"), str_cat("'checkpoint.signals': ", e.what()));
  }
  const DataConfig& d = loader.value().data;
  if (d.mean.size() != d.std.size() && !d.mean.empty() && !d.std.empty()) {
    const auto& mean_at = loader.origin_of("data", "mean");
    const auto& std_at = loader.origin_of("data", "std");
    loader.fail(mean_at.rank > std_at.rank ? mean_at : std_at,
                str_cat("'data.mean' has ", d.mean.size(), " values but 'data.std' has ", d.std.size(),
                        ": give one of each per channel"));
  }
  for (const char* key : {"crop_scale", "crop_ratio"}) {
    const std::vector<double>& range = std::string_view(key) == "crop_scale" ? d.crop_scale : d.crop_ratio;
    if (range.size() != 2 || range[0] > range[1])
      loader.fail(loader.origin_of("data", key),
                  str_cat("'data.", key, "' must be [lowest, highest], got ", range.size(), " value(s)",
                          range.size() == 2 ? " in decreasing order" : ""));
  }
  if (d.source == "imagefolder" && d.channels != 1 && d.channels != 3)
    loader.fail(loader.origin_of("data", "channels"), str_cat("'data.channels' must be 1 or 3, got ", d.channels));
  if (d.source == "imagefolder" && static_cast<int64_t>(d.mean.size()) != d.channels)
    loader.fail(
        loader.origin_of("data", "mean"),
        str_cat("'data.mean' has ", d.mean.size(), " value(s) but data.channels = ", d.channels,
                d.channels == 3 ? " (ImageNet's: mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225])" : ""));
}

}  // namespace

Config parse_config(const std::string& text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    throw Error(str_cat(source_name, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description()));
  }
  SchemaLoader<Config> loader(source_name, config_schema());
  loader.apply_document(root);
  for (size_t i = 0; i < overrides.size(); ++i) loader.apply_override(overrides[i], i);
  loader.validate();
  check_config_rules(loader);
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
