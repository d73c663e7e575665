// JSON through nlohmann-json (Debian's nlohmann-json3-dev): values are its ordered_json, whose
// objects keep their keys in insertion order, as our metrics lines and safetensors headers are
// written. Parsing is stricter than the library's own: a repeated key, which it would silently
// resolve to the last value, and nesting deeper than kMaxJsonDepth are errors, and every error is
// an rt::Error naming the source and the byte offset.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace rt {

using Json = nlohmann::ordered_json;

// Containers nested deeper than this are rejected, so that hostile input is refused early.
inline constexpr int kMaxJsonDepth = 256;

// Exactly one JSON value with optional whitespace around it. `source` names the text in error
// messages (a file name, "header of x.safetensors").
Json parse_json(std::string_view text, std::string_view source = "JSON text");

// Compact, no whitespace. Non-finite numbers are written as null; strings are escaped (quote,
// backslash, control characters); other bytes pass unchanged, but invalid UTF-8 becomes U+FFFD.
std::string to_json(const Json& value);

}  // namespace rt
