// Tests for app/json.h: round trips, escaping (checked against hand-written JSON text and, where
// available, Python's json module), malformed input and the JsonLine metrics writer.
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

TEST(Json, ParsesEveryKindAndWritesItBackCompactly) {
  const std::string text = R"( { "a" : [1, -2.5, true, false, null, "s"], "b": {"c": {}}, "d": [] } )";
  const JsonValue v = parse_json(text);
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.as_object().size(), 3u);
  EXPECT_EQ(v.find("a")->as_array()[0].as_int(), 1);
  EXPECT_EQ(v.find("a")->as_array()[1].as_double(), -2.5);
  EXPECT_TRUE(v.find("a")->as_array()[2].as_bool());
  EXPECT_TRUE(v.find("a")->as_array()[4].is_null());
  EXPECT_EQ(v.find("a")->as_array()[5].as_string(), "s");
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_EQ(to_json(v), R"({"a":[1,-2.5,true,false,null,"s"],"b":{"c":{}},"d":[]})");
  EXPECT_EQ(parse_json(to_json(v)), v);
}

TEST(Json, KeepsObjectKeysInInsertionOrder) {
  const JsonValue v = parse_json(R"({"z":1,"a":2,"m":3})");
  EXPECT_EQ(v.as_object()[0].first, "z");
  EXPECT_EQ(v.as_object()[1].first, "a");
  EXPECT_EQ(v.as_object()[2].first, "m");
  JsonValue built = JsonValue::object();
  built.set("z", 1);
  built.set("a", 2);
  built.set("z", 5);  // replaces in place
  EXPECT_EQ(to_json(built), R"({"z":5,"a":2})");
  EXPECT_THROW(JsonValue::object({{"k", 1}, {"k", 2}}), Error);
}

TEST(Json, KeepsLargeIntegersExact) {
  // 2^53 + 1 is not representable as a double; byte offsets in big checkpoints can exceed 2^53.
  const JsonValue v = parse_json("[9007199254740993, -9223372036854775808, 9223372036854775807]");
  EXPECT_EQ(v.as_array()[0].as_int(), 9007199254740993LL);
  EXPECT_EQ(v.as_array()[1].as_int(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(v.as_array()[2].as_int(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(to_json(v), "[9007199254740993,-9223372036854775808,9223372036854775807]");
  // Beyond int64: still a number, as a double.
  const JsonValue big = parse_json("18446744073709551616");
  EXPECT_FALSE(big.is_int());
  EXPECT_EQ(big.as_double(), 18446744073709551616.0);
}

TEST(Json, NonIntegralNumbersAreNotInts) {
  const JsonValue v = parse_json("1.5");
  EXPECT_FALSE(v.is_int());
  EXPECT_THROW(v.as_int(), Error);
  EXPECT_TRUE(parse_json("2e3").is_int());
  EXPECT_EQ(parse_json("2e3").as_int(), 2000);
}

TEST(Json, DoublesRoundTripExactly) {
  for (double d : {0.1, -1.0 / 3.0, 1e-300, 6.02214076e23, 5e-324, std::numeric_limits<double>::max()}) {
    const JsonValue back = parse_json(to_json(JsonValue(d)));
    EXPECT_EQ(back.as_double(), d) << to_json(JsonValue(d));
  }
  EXPECT_EQ(to_json(JsonValue(-0.0)), "-0");
}

TEST(Json, NonFiniteNumbersAreWrittenAsNull) {
  EXPECT_EQ(to_json(JsonValue(std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(to_json(JsonValue(std::nan(""))), "null");
}

TEST(Json, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string raw = std::string("q\"b\\n\nt\tr\rf\fb\bz") + '\0' + "\x01\x1f" + "\x7f";
  EXPECT_EQ(to_json(JsonValue(raw)), "\"q\\\"b\\\\n\\nt\\tr\\rf\\fb\\bz\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(parse_json(to_json(JsonValue(raw))).as_string(), raw);
}

TEST(Json, PassesUtf8ThroughAndDecodesUnicodeEscapes) {
  const std::string utf8 = "gr\xc3\xbc\xc3\x9f \xe6\x97\xa5 \xf0\x9f\x98\x80";  // grüß 日 😀
  EXPECT_EQ(to_json(JsonValue(utf8)), "\"" + utf8 + "\"");
  EXPECT_EQ(parse_json("\"" + utf8 + "\"").as_string(), utf8);
  EXPECT_EQ(parse_json(R"("gr\u00fc\u00DF \u65e5 \ud83d\ude00 \/")").as_string(), utf8 + " /");
}

TEST(Json, MalformedInputNamesTheSourceAndByteOffset) {
  std::string msg = parse_error(R"({"a": 1,, "b": 2})");
  EXPECT_NE(msg.find("test.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at byte 8"), std::string::npos) << msg;

  EXPECT_NE(parse_error("[1, 2").find("at byte 5"), std::string::npos);
  EXPECT_NE(parse_error("").find("at byte 0"), std::string::npos);
  EXPECT_NE(parse_error("[1] x").find("unexpected text after"), std::string::npos);
}

TEST(Json, RejectsWhatTheGrammarForbids) {
  for (const char* bad : {"{a: 1}", "{'a': 1}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "1e", "tru",
                          "nul", "\"abc", "\"a\nb\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "NaN",
                          "Infinity", "1e999", "[1 2]", "{\"a\" 1}"}) {
    EXPECT_NE(parse_error(bad), "") << "accepted: " << bad;
  }
}

TEST(Json, RejectsDuplicateKeysNamingThem) {
  const std::string msg = parse_error(R"({"w": 1, "w": 2})");
  EXPECT_NE(msg.find("duplicate key \"w\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("at byte 9"), std::string::npos) << msg;
}

TEST(Json, RejectsNestingBeyondTheDepthLimit) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(parse_json(ok));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string msg = parse_error(deep);
  EXPECT_NE(msg.find("nesting deeper than"), std::string::npos) << msg;
}

TEST(Json, WrongKindAccessIsAnError) {
  EXPECT_THROW(parse_json("\"s\"").as_double(), Error);
  EXPECT_THROW(parse_json("[]").as_object(), Error);
  EXPECT_THROW(parse_json("1").as_string(), Error);
}

TEST(JsonLine, WritesOneCompactObjectInOrder) {
  const std::string line = JsonLine()
                               .add("step", int64_t{3})
                               .add("epoch", 1)
                               .add("images", size_t{4096})
                               .add("loss", 0.25)
                               .add("lr", 0.1f)
                               .add("phase", "train")
                               .add("note", std::string("a \"b\"\n"))
                               .add("nan_seen", false)
                               .str();
  EXPECT_EQ(line, R"({"step":3,"epoch":1,"images":4096,"loss":0.25,"lr":0.10000000149011612,)"
                  R"("phase":"train","note":"a \"b\"\n","nan_seen":false})");
  EXPECT_NO_THROW(parse_json(line));
  EXPECT_EQ(JsonLine().str(), "{}");
}

TEST(JsonLine, WritesNonFiniteDoublesAsNull) {
  const std::string line = JsonLine()
                               .add("loss", std::numeric_limits<double>::quiet_NaN())
                               .add("grad_norm", -std::numeric_limits<double>::infinity())
                               .str();
  EXPECT_EQ(line, R"({"loss":null,"grad_norm":null})");
  EXPECT_TRUE(parse_json(line).find("loss")->is_null());
}

// Python's json module is an independent parser: it must read our escaping back to the same text.
TEST(Json, PythonReadsOurEscapedStrings) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 not found";
  const std::string raw = std::string("q\"\\\n\t") + '\x01' + "\xc3\xbc\xf0\x9f\x98\x80";
  const std::string json = to_json(JsonValue::array({JsonValue(raw), JsonValue(1e-7), JsonValue(int64_t{1} << 60)}));
  char path[] = "/tmp/rt_json_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  ::close(fd);
  // Python prints the code points in hex so the comparison does not depend on its output encoding.
  const std::string cmd = std::string("/usr/bin/python3 -c \"import json,sys; v=json.load(open(sys.argv[1], "
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
