#include "formats/json.h"

#include <unordered_set>
#include <vector>

#include "base/check.h"

namespace rt {

Json parse_json(std::string_view text, std::string_view source) {
  // One set of seen keys per open container (empty for arrays): nlohmann reports each key as it
  // reads it, with the depth of the container it belongs to.
  std::vector<std::unordered_set<std::string>> seen;
  auto check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    using Event = Json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      RT_CHECK(depth < kMaxJsonDepth, source, ": JSON nesting deeper than ", kMaxJsonDepth, " levels");
      seen.emplace_back();
    } else if (event == Event::object_end || event == Event::array_end) {
      seen.pop_back();
    } else if (event == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      RT_CHECK(seen.back().insert(key).second, source, ": duplicate key \"", key, "\" in a JSON object");
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ..."; the
    // byte (1-based, of the character read last) says more in a one-line header than line and column.
    std::string what = e.what();
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw Error(str_cat(source, ": invalid JSON at byte ", e.byte > 0 ? e.byte - 1 : 0, ": ", what));
  } catch (const Json::exception& e) {
    // The library's other refusals, such as a number beyond a double ("5e999": out_of_range.406,
    // which carries no position): the text's error all the same, at the number where one is named.
    std::string what = e.what();
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    const size_t quote = what.find('\''), end = what.rfind('\'');
    const size_t at = quote < end ? text.find(what.substr(quote + 1, end - quote - 1)) : std::string_view::npos;
    if (at != std::string_view::npos) throw Error(str_cat(source, ": invalid JSON at byte ", at, ": ", what));
    throw Error(str_cat(source, ": invalid JSON: ", what));
  }
}

std::string to_json(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace rt
