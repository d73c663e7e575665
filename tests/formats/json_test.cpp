// Tests for formats/json.h: what ringtrain adds to nlohmann-json (repeated keys and deep nesting
// refused, errors naming the source and the byte, non-finite numbers and invalid UTF-8 written
// safely) and what the metrics lines and safetensors headers rely on (insertion order, exact
// 64-bit integers); Python's json module reads our output back as an independent parser.
#include "formats/json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "base/check.h"

namespace rt {
namespace {

// The message of the rt::Error that parse_json throws, or "" when it does not throw.
std::string parse_error(std::string_view text) {
  try {
    parse_json(text, "test.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Json, KeepsObjectKeysInInsertionOrder) {
  const Json v = parse_json(R"({"z": 1, "a": 2, "m": 3})");
  EXPECT_EQ(to_json(v), R"({"z":1,"a":2,"m":3})");
  Json built = {{"step", 3}, {"epoch", 1}, {"loss", 0.25}, {"phase", "train"}, {"nan_seen", false}};
  built["lr"] = 0.1f;
  EXPECT_EQ(to_json(built),
            R"({"step":3,"epoch":1,"loss":0.25,"phase":"train","nan_seen":false,"lr":0.10000000149011612})");
}

TEST(Json, KeepsLargeIntegersExact) {
  const Json v = parse_json("[9007199254740993, -9223372036854775808, 9223372036854775807, 18446744073709551615]");
  EXPECT_EQ(v[0].get<int64_t>(), 9007199254740993LL);
  EXPECT_EQ(v[1].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(v[2].get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(v[3].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(to_json(v), "[9007199254740993,-9223372036854775808,9223372036854775807,18446744073709551615]");
}

TEST(Json, DoublesRoundTripExactly) {
  for (double d : {0.1, 1.0 / 3.0, 1e-300, 6.02214076e23, -2.5, 4503599627370497.0}) {
    EXPECT_EQ(parse_json(to_json(Json(d))).get<double>(), d) << to_json(Json(d));
  }
}

TEST(Json, NonFiniteNumbersAreWrittenAsNull) {
  const Json line = {{"loss", std::numeric_limits<double>::quiet_NaN()},
                     {"grad_norm", -std::numeric_limits<double>::infinity()}};
  EXPECT_EQ(to_json(line), R"({"loss":null,"grad_norm":null})");
  EXPECT_TRUE(parse_json(to_json(line))["loss"].is_null());
}

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string raw = std::string("q\"b\\n\nt\tr\rf\fb\bz") + '\0' + "\x01\x1f\x7f";
  EXPECT_EQ(to_json(Json(raw)), "\"q\\\"b\\\\n\\nt\\tr\\rf\\fb\\bz\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(parse_json(to_json(Json(raw))).get<std::string>(), raw);
}

TEST(Json, PassesUtf8ThroughAndReplacesInvalidBytes) {
  const std::string utf8 = "gr\xc3\xbc\xc3\x9f \xe6\x97\xa5 \xf0\x9f\x98\x80";
  EXPECT_EQ(to_json(Json(utf8)), "\"" + utf8 + "\"");
  EXPECT_EQ(parse_json(R"("gr\u00fc\u00DF \u65e5 \ud83d\ude00 \/")").get<std::string>(), utf8 + " /");
  // A file name need not be UTF-8; writing it must not throw (nlohmann's default would).
  EXPECT_EQ(to_json(Json("a\xff"
                         "b")),
            "\"a\xef\xbf\xbd"
            "b\"");
}

TEST(Json, MalformedInputNamesTheSourceAndByteOffset) {
  const std::string msg = parse_error(R"({"a": 1,, "b": 2})");
  EXPECT_NE(msg.find("test.json: invalid JSON at byte 8"), std::string::npos) << msg;
  EXPECT_NE(parse_error("[1, 2").find("at byte 5"), std::string::npos) << parse_error("[1, 2");
  EXPECT_NE(parse_error("").find("at byte 0"), std::string::npos) << parse_error("");
  EXPECT_NE(parse_error("[1] x").find("expected end of input"), std::string::npos) << parse_error("[1] x");
}

TEST(Json, RejectsWhatTheGrammarForbids) {
  for (const char* bad :
       {"{a: 1}",      "{'a': 1}",    "[1,]", "{\"a\":1,}", "01",    "1.",        ".5",       "-",
        "+1",          "1e",          "tru",  "nul",        "\"abc", "\"a\nb\"",  "\"\\x\"",  "\"\\u12\"",
        "\"\\ud800\"", "\"\\udc00\"", "NaN",  "Infinity",   "[1 2]", "{\"a\" 1}", "/* c */ 1"}) {
    EXPECT_NE(parse_error(bad), "") << "accepted: " << bad;
  }
}

TEST(Json, RejectsRepeatedKeysNamingThem) {
  const std::string msg = parse_error(R"({"a": {"w": 1, "x": {"w": 0}, "w": 2}})");
  EXPECT_NE(msg.find("test.json: duplicate key \"w\""), std::string::npos) << msg;
  // The same key in sibling objects is no repeat.
  EXPECT_EQ(parse_error(R"([{"w": 1}, {"w": 2}, {"v": {"w": 3}}])"), "");
}

TEST(Json, RejectsNestingBeyondTheDepthLimit) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(parse_error(ok), "");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string msg = parse_error(deep);
  EXPECT_NE(msg.find("test.json: JSON nesting deeper than 256"), std::string::npos) << msg;
}

// Python's json module is an independent parser: it must read our escaping back to the same text.
TEST(Json, PythonReadsOurEscapedStrings) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 not found";
  const std::string raw = std::string("q\"\\\n\t") + '\x01' + "\xc3\xbc\xf0\x9f\x98\x80";
  const std::string json = to_json(Json::array({raw, 1e-7, int64_t{1} << 60}));
  char path[] = "/tmp/rt_json_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  ::close(fd);
  // Python prints the code points in hex so the comparison does not depend on its output encoding.
  const std::string cmd = std::string(
                              "/usr/bin/python3 -c \"import json,sys; v=json.load(open(sys.argv[1], "
                              "encoding='utf-8')); print(' '.join('%x' % ord(c) for c in v[0]), "
                              "repr(v[1]), v[2])\" ") +
                          path;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  ::unlink(path);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "71 22 5c a 9 1 fc 1f600 1e-07 1152921504606846976\n");
}

}  // namespace
}  // namespace rt
