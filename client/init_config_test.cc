#include "client/init_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

int32_t CodeOf(const absl::StatusOr<InitConfig>& result) {
  return acld::AclCodeOf(result.status());
}

// Parses `json` and returns the aclError (0 on success).
int32_t ParseCode(const std::string& json) { return CodeOf(ParseInitConfig(json)); }

InitConfig MustParse(const std::string& json) {
  absl::StatusOr<InitConfig> result = ParseInitConfig(json);
  EXPECT_TRUE(result.ok()) << json << "\n -> " << result.status();
  return result.ok() ? *std::move(result) : InitConfig{};
}

std::string Nested(char open, char close, int depth, const std::string& inner) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open == '{' ? "{\"k\":" : std::string(1, open);
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

std::string Setting(const InitConfig& config, const std::string& key) {
  for (const auto& [k, v] : config.settings) {
    if (k == key) return v;
  }
  return "<absent>";
}

// Wraps a dump block into a full config.
std::string Dump(const std::string& body) { return absl::StrCat("{\"dump\":{", body, "}}"); }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = absl::StrCat(::testing::TempDir(), "/init_config_test.XXXXXX");
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::system(absl::StrCat("rm -rf '", path_, "'").c_str()); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string file = absl::StrCat(path_, "/", name);
    std::ofstream out(file, std::ios::binary);
    out << content;
    return file;
  }

 private:
  std::string path_;
};

// ------------------------------------------------------------- file reading --

TEST(ReadInitConfigTest, NullPathIsEmptyConfig) {
  absl::StatusOr<InitConfig> config = ReadInitConfig(nullptr);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->content, "");
  EXPECT_EQ(config->err_msg_mode, 0);
  EXPECT_FALSE(config->default_device.has_value());
  EXPECT_EQ(config->aicore_stack_size, 0u);
  EXPECT_EQ(config->simt_stack_size, 0u);
  EXPECT_EQ(config->simt_divergence_stack_size, 0u);
  EXPECT_EQ(config->simt_printf_fifo_size, 2u * 1024 * 1024);
  EXPECT_EQ(config->simd_printf_fifo_size_per_core, 32u * 1024);
  EXPECT_EQ(config->max_opqueue_num, 20000u);
  EXPECT_EQ(config->dump_kind, DumpKind::kNone);
  EXPECT_TRUE(config->settings.empty());
}

TEST(ReadInitConfigTest, EmptyPathIsEmptyConfig) {
  absl::StatusOr<InitConfig> config = ReadInitConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->content, "");
  EXPECT_TRUE(config->settings.empty());
}

TEST(ReadInitConfigTest, MissingFileIsInvalidFile) {
  TempDir dir;
  const std::string path = dir.path() + "/no_such_acl.json";
  absl::StatusOr<InitConfig> config = ReadInitConfig(path.c_str());
  EXPECT_EQ(CodeOf(config), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(config.status().message().find(path), std::string::npos) << config.status();
  EXPECT_NE(config.status().message().find("does not exist"), std::string::npos) << config.status();
}

TEST(ReadInitConfigTest, MissingParentDirectoryIsInvalidFile) {
  TempDir dir;
  const std::string path = dir.path() + "/missing_dir/acl.json";
  EXPECT_EQ(CodeOf(ReadInitConfig(path.c_str())), ACL_ERROR_INVALID_FILE);
}

TEST(ReadInitConfigTest, PathThroughAFileIsInvalidFile) {
  TempDir dir;
  const std::string file = dir.Write("plain", "{}");
  const std::string path = file + "/acl.json";  // ENOTDIR
  EXPECT_EQ(CodeOf(ReadInitConfig(path.c_str())), ACL_ERROR_INVALID_FILE);
}

TEST(ReadInitConfigTest, DirectoryIsInvalidFile) {
  TempDir dir;
  absl::StatusOr<InitConfig> config = ReadInitConfig(dir.path().c_str());
  EXPECT_EQ(CodeOf(config), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(config.status().message().find("directory"), std::string::npos) << config.status();
  EXPECT_NE(config.status().message().find(dir.path()), std::string::npos) << config.status();
}

TEST(ReadInitConfigTest, FifoIsInvalidFileAndDoesNotHang) {
  TempDir dir;
  const std::string path = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<InitConfig> config = ReadInitConfig(path.c_str());
  EXPECT_EQ(CodeOf(config), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(config.status().message().find("not a regular file"), std::string::npos)
      << config.status();
}

TEST(ReadInitConfigTest, UnreadableFileIsInvalidFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can read a mode-000 file";
  TempDir dir;
  const std::string path = dir.Write("secret.json", "{}");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  absl::StatusOr<InitConfig> config = ReadInitConfig(path.c_str());
  EXPECT_EQ(CodeOf(config), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(config.status().message().find(path), std::string::npos) << config.status();
}

TEST(ReadInitConfigTest, EmptyFileIsValidEmptyConfig) {
  TempDir dir;
  const std::string path = dir.Write("empty.json", "");
  absl::StatusOr<InitConfig> config = ReadInitConfig(path.c_str());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->content, "");
  EXPECT_TRUE(config->settings.empty());
}

TEST(ReadInitConfigTest, FileOfTenMiBIsAcceptedAndOneByteMoreIsNot) {
  TempDir dir;
  std::string content = "{}";
  content.resize(kMaxConfigFileBytes, ' ');
  const std::string ok_path = dir.Write("ten.json", content);
  absl::StatusOr<InitConfig> config = ReadInitConfig(ok_path.c_str());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->content.size(), kMaxConfigFileBytes);

  content.push_back(' ');
  const std::string big_path = dir.Write("big.json", content);
  absl::StatusOr<InitConfig> big = ReadInitConfig(big_path.c_str());
  EXPECT_EQ(CodeOf(big), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(big.status().message().find("10 MiB"), std::string::npos) << big.status();
}

TEST(ReadInitConfigTest, ContentIsKeptByteForByte) {
  TempDir dir;
  const std::string content = "{\n  \"err_msg_mode\": \"1\",\n  \"x\": [1, 2]\n}\n";
  const std::string path = dir.Write("acl.json", content);
  absl::StatusOr<InitConfig> config = ReadInitConfig(path.c_str());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->content, content);
  EXPECT_EQ(config->err_msg_mode, 1);
  EXPECT_EQ(Setting(*config, "x"), "[1,2]");
}

TEST(ReadInitConfigTest, ErrorsFromAFileNameTheFile) {
  TempDir dir;
  const std::string bad_json = dir.Write("bad.json", "{\"a\":");
  absl::StatusOr<InitConfig> parse = ReadInitConfig(bad_json.c_str());
  EXPECT_EQ(CodeOf(parse), ACL_ERROR_PARSE_FILE);
  EXPECT_NE(parse.status().message().find(bad_json), std::string::npos) << parse.status();

  const std::string bad_value = dir.Write("bad_value.json", "{\"err_msg_mode\":\"7\"}");
  absl::StatusOr<InitConfig> param = ReadInitConfig(bad_value.c_str());
  EXPECT_EQ(CodeOf(param), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(param.status().message().find(bad_value), std::string::npos) << param.status();
  EXPECT_NE(param.status().message().find("err_msg_mode"), std::string::npos) << param.status();
  EXPECT_NE(param.status().message().find("\"7\""), std::string::npos) << param.status();
}

TEST(ReadConfigFileTest, ReturnsRawContentWithoutValidating) {
  TempDir dir;
  const std::string path = dir.Write("raw.json", "not json at all");
  absl::StatusOr<std::string> content = ReadConfigFile(path.c_str());
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "not json at all");
}

TEST(ReadConfigFileTest, SameFileErrorsAsReadInitConfig) {
  TempDir dir;
  EXPECT_EQ(*ReadConfigFile(nullptr), "");
  EXPECT_EQ(*ReadConfigFile(""), "");
  EXPECT_EQ(acld::AclCodeOf(ReadConfigFile((dir.path() + "/missing").c_str()).status()),
            ACL_ERROR_INVALID_FILE);
  EXPECT_EQ(acld::AclCodeOf(ReadConfigFile(dir.path().c_str()).status()), ACL_ERROR_INVALID_FILE);
}

// ---------------------------------------------------------------- parsing --

TEST(ParseInitConfigTest, EmptyContentIsEmptyConfig) {
  InitConfig config = MustParse("");
  EXPECT_EQ(config.content, "");
  EXPECT_TRUE(config.settings.empty());
}

// CANN passes a non-empty buffer to nlohmann::json::parse, which rejects a
// buffer of only whitespace; so does aclInit, with ACL_ERROR_PARSE_FILE.
TEST(ParseInitConfigTest, WhitespaceOnlyIsParseError) {
  EXPECT_EQ(ParseCode(" "), ACL_ERROR_PARSE_FILE);
  EXPECT_EQ(ParseCode("\n"), ACL_ERROR_PARSE_FILE);
  EXPECT_EQ(ParseCode(" \t\r\n "), ACL_ERROR_PARSE_FILE);
}

TEST(ParseInitConfigTest, EmptyObjectHasDefaults) {
  InitConfig config = MustParse("{}");
  EXPECT_EQ(config.content, "{}");
  EXPECT_EQ(config.err_msg_mode, 0);
  EXPECT_FALSE(config.default_device.has_value());
  EXPECT_EQ(config.max_opqueue_num, 20000u);
  EXPECT_TRUE(config.settings.empty());
}

TEST(ParseInitConfigTest, SurroundingWhitespaceIsFine) {
  InitConfig config = MustParse("\n\t {\"err_msg_mode\" : \"1\"} \r\n");
  EXPECT_EQ(config.err_msg_mode, 1);
}

TEST(ParseInitConfigTest, InvalidJsonIsParseError) {
  const std::vector<std::string> cases = {
      "{",
      "}",
      "{\"a\":}",
      "{\"a\" 1}",
      "[1,2",
      "{\"a\":1 \"b\":2}",
      "{a:1}",         // unquoted key (protobuf alone would accept)
      "{'a':1}",       // single quotes (protobuf alone would accept)
      "{\"a\":1,}",    // trailing comma (protobuf alone would accept)
      "[1,]",          // trailing comma in an array
      "{\"a\":tru}",   // bad literal
      "{\"a\":True}",  // literals are lower case
      "{\"a\":1} x",   // trailing garbage
      "{\"a\":1}{}",   // two values
      "{\"a\":NaN}",
      "{\"a\":Infinity}",
      "{\"a\":01}",     // leading zero
      "{\"a\":1e400}",  // out of double range
      "{\"a\":.5}",
      "\"unterminated",
      "{\"a\":\"line\nbreak\"}",  // raw control character in a string
      "{\"a\":\"\\q\"}",          // bad escape (protobuf alone would accept)
      "{\"a\":\"\\x41\"}",
      "{\"a\":\"\\u12\"}",
      "{\"a\":\"\\u12G4\"}",
      "{\"a\":\"\\",
      "// comment\n{}",
      "{\"a\":1}\x01",
      std::string("{\"a\":\"x") + '\0' + "y\"}",  // a raw NUL inside a string
  };
  for (const std::string& json : cases) {
    absl::StatusOr<InitConfig> result = ParseInitConfig(json);
    EXPECT_EQ(CodeOf(result), ACL_ERROR_PARSE_FILE)
        << "input: " << json << " -> " << result.status();
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("not valid JSON"), std::string::npos)
          << result.status();
    }
  }
}

TEST(ParseInitConfigTest, ValidEscapesAreAccepted) {
  InitConfig config = MustParse("{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u00E9\"}");
  EXPECT_EQ(Setting(config, "a"), "\"\\\"\\\\/\\b\\f\\n\\r\\t\xC3\xA9\xC3\xA9\"");
}

// Changed with the move to nlohmann::json (CANN's parser): a repeated key was a
// parse error; nlohmann documents that the last value wins, and so it does in
// CANN. The earlier values are neither checked nor kept.
TEST(ParseInitConfigTest, DuplicateKeyKeepsTheLastValue) {
  InitConfig config = MustParse("{\"dump\":{},\"err_msg_mode\":\"0\",\"dump\":{}}");
  EXPECT_EQ(config.dump_kind, DumpKind::kNone);
  EXPECT_EQ(MustParse("{\"a\":1,\"a\":2}").settings, (Settings{{"a", "2"}}));
  InitConfig last = MustParse("{\"err_msg_mode\":\"7\",\"err_msg_mode\":\"1\"}");
  EXPECT_EQ(last.err_msg_mode, 1);
  EXPECT_EQ(Setting(last, "err_msg_mode"), "1");
  EXPECT_EQ(ParseCode("{\"err_msg_mode\":\"1\",\"err_msg_mode\":\"7\"}"), ACL_ERROR_INVALID_PARAM);
}

// Changed with the move to nlohmann::json (CANN's parser): `{}` followed by a
// NUL byte was a parse error; nlohmann documents that a NUL byte outside a
// string ends the input, and so it does in CANN (a file written by C code with
// its terminating NUL works there). The content is still kept whole.
TEST(ParseInitConfigTest, NulByteOutsideAStringEndsTheJson) {
  const std::string json =
      std::string("{\"err_msg_mode\":\"1\"}") + '\0' + "{\"err_msg_mode\":\"7\"}";
  InitConfig config = MustParse(json);
  EXPECT_EQ(config.err_msg_mode, 1);
  EXPECT_EQ(config.content, json);
  EXPECT_TRUE(MustParse(std::string("{}") + '\0').settings.empty());
  // The JSON ends inside the object.
  EXPECT_EQ(ParseCode(std::string("{") + '\0' + "}"), ACL_ERROR_PARSE_FILE);
}

TEST(ParseInitConfigTest, WhitespaceOnlyMessageSaysHowToWriteAnEmptyConfig) {
  absl::StatusOr<InitConfig> result = ParseInitConfig("\n");
  EXPECT_NE(result.status().message().find("only whitespace"), std::string::npos)
      << result.status();
}

TEST(ParseInitConfigTest, ParseErrorSaysWhere) {
  absl::StatusOr<InitConfig> result = ParseInitConfig("{\n  \"a\": 1,\n  b: 2\n}");
  EXPECT_EQ(CodeOf(result), ACL_ERROR_PARSE_FILE);
  EXPECT_NE(result.status().message().find("line 3"), std::string::npos) << result.status();
}

// The parser quotes the token it was reading; for an unterminated string that
// is the rest of the file, which must not all end up in aclGetRecentErrMsg.
TEST(ParseInitConfigTest, ParseErrorOfAHugeTokenIsShort) {
  absl::StatusOr<InitConfig> result =
      ParseInitConfig(absl::StrCat("{\"a\":\"", std::string(100000, 'x')));
  EXPECT_EQ(CodeOf(result), ACL_ERROR_PARSE_FILE);
  EXPECT_LT(result.status().message().size(), 400u) << result.status();
  EXPECT_NE(result.status().message().find("line 1"), std::string::npos) << result.status();
}

TEST(ParseInitConfigTest, Utf8ByteOrderMarkIsSkipped) {
  const std::string json = "\xEF\xBB\xBF{\"err_msg_mode\":\"1\"}";
  InitConfig config = MustParse(json);
  EXPECT_EQ(config.err_msg_mode, 1);
  EXPECT_EQ(config.content, json);  // the content itself is untouched
}

TEST(ParseInitConfigTest, UnicodeStringsAreFine) {
  InitConfig config = MustParse("{\"note\":\"caf\\u00e9 \xE6\x98\x87\xE8\x85\xBE\"}");
  EXPECT_EQ(Setting(config, "note"), "\"caf\xC3\xA9 \xE6\x98\x87\xE8\x85\xBE\"");
}

// CANN looks keys up with nlohmann's find(), which finds nothing in a
// non-object, so such a config behaves like an empty one.
TEST(ParseInitConfigTest, NonObjectTopLevelIsAcceptedWithoutKeys) {
  for (const std::string json :
       {"[1]", "3", "\"x\"", "null", "true", "[]", "[{\"err_msg_mode\":\"9\"}]"}) {
    absl::StatusOr<InitConfig> result = ParseInitConfig(json);
    ASSERT_TRUE(result.ok()) << json << " -> " << result.status();
    EXPECT_EQ(result->content, json);
    EXPECT_EQ(result->err_msg_mode, 0);
    EXPECT_TRUE(result->settings.empty()) << json;
  }
}

// ---------------------------------------------------------------- nesting --

TEST(NestingTest, TenObjectLevelsAreAccepted) {
  const std::string json = Nested('{', '}', 10, "1");
  ASSERT_EQ(std::count(json.begin(), json.end(), '{'), 10);
  MustParse(json);
}

TEST(NestingTest, ElevenObjectLevelsAreParseError) {
  const std::string json = Nested('{', '}', 11, "1");
  absl::StatusOr<InitConfig> result = ParseInitConfig(json);
  EXPECT_EQ(CodeOf(result), ACL_ERROR_PARSE_FILE);
  EXPECT_NE(result.status().message().find("'{' nesting exceeds the maximum of 10"),
            std::string::npos)
      << result.status();
}

TEST(NestingTest, TenArrayLevelsAreAccepted) {
  MustParse(Nested('[', ']', 10, "1"));
  MustParse(absl::StrCat("{\"k\":", Nested('[', ']', 10, "1"), "}"));
}

TEST(NestingTest, ElevenArrayLevelsAreParseError) {
  absl::StatusOr<InitConfig> top = ParseInitConfig(Nested('[', ']', 11, "1"));
  EXPECT_EQ(CodeOf(top), ACL_ERROR_PARSE_FILE);
  EXPECT_NE(top.status().message().find("'[' nesting exceeds the maximum of 10"), std::string::npos)
      << top.status();
  EXPECT_EQ(ParseCode(absl::StrCat("{\"k\":", Nested('[', ']', 11, "1"), "}")),
            ACL_ERROR_PARSE_FILE);
}

// `{` and `[` are counted separately: 10 of each, interleaved (20 levels in
// all), is still within the limits.
TEST(NestingTest, ObjectAndArrayLevelsAreCountedSeparately) {
  std::string json;
  for (int i = 0; i < 10; ++i) json += "{\"k\":[";
  json += "1";
  for (int i = 0; i < 10; ++i) json += "]}";
  MustParse(json);
  EXPECT_EQ(ParseCode("[" + json + "]"), ACL_ERROR_PARSE_FILE);        // 11 `[`
  EXPECT_EQ(ParseCode("{\"k\":" + json + "}"), ACL_ERROR_PARSE_FILE);  // 11 `{`
}

TEST(NestingTest, SiblingsDoNotAddUp) {
  std::string json = "{";
  for (int i = 0; i < 30; ++i) json += absl::StrCat(i ? "," : "", "\"k", i, "\":{\"a\":[[1]]}");
  json += "}";
  MustParse(json);
}

TEST(NestingTest, BracesInsideStringsAreNotCounted) {
  MustParse("{\"a\":\"{{{{{{{{{{{{{{{{{{{{[[[[[[[[[[[[[[[[[[\"}");
  MustParse("{\"a\":\"\\\"{{{{{{{{{{{{{{{{\\\\\",\"b\":\"]]]]}}}}\"}");
  MustParse("{\"{{{{{{{{{{{{\":1}");
}

// ------------------------------------------------------------- err_msg_mode --

TEST(ErrMsgModeTest, StringZeroAndOne) {
  EXPECT_EQ(MustParse("{\"err_msg_mode\":\"0\"}").err_msg_mode, 0);
  InitConfig config = MustParse("{\"err_msg_mode\":\"1\"}");
  EXPECT_EQ(config.err_msg_mode, 1);
  EXPECT_EQ(Setting(config, "err_msg_mode"), "1");
}

TEST(ErrMsgModeTest, AnythingElseIsInvalidParam) {
  for (const std::string value :
       {"0", "1", "\"2\"", "\"\"", "\"01\"", "\" 1\"", "true", "null", "[\"1\"]", "{}"}) {
    absl::StatusOr<InitConfig> result =
        ParseInitConfig(absl::StrCat("{\"err_msg_mode\":", value, "}"));
    EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << value;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("err_msg_mode"), std::string::npos)
          << result.status();
    }
  }
}

// ------------------------------------------------------------ defaultDevice --

TEST(DefaultDeviceTest, DecimalStrings) {
  InitConfig zero = MustParse("{\"defaultDevice\":{\"default_device\":\"0\"}}");
  ASSERT_TRUE(zero.default_device.has_value());
  EXPECT_EQ(*zero.default_device, 0);
  EXPECT_EQ(Setting(zero, "defaultDevice.default_device"), "0");
  EXPECT_EQ(*MustParse("{\"defaultDevice\":{\"default_device\":\"7\"}}").default_device, 7);
  EXPECT_EQ(*MustParse("{\"defaultDevice\":{\"default_device\":\"2147483647\"}}").default_device,
            2147483647);
}

TEST(DefaultDeviceTest, AbsentKeyLeavesItUnset) {
  InitConfig config = MustParse("{\"defaultDevice\":{}}");
  EXPECT_FALSE(config.default_device.has_value());
  InitConfig other = MustParse("{\"defaultDevice\":{\"note\":1}}");
  EXPECT_FALSE(other.default_device.has_value());
  EXPECT_EQ(Setting(other, "defaultDevice.note"), "1");
}

// CANN reads default_device with get<std::string>(): a JSON number fails.
TEST(DefaultDeviceTest, NumberIsInvalidParamWithHint) {
  absl::StatusOr<InitConfig> result = ParseInitConfig("{\"defaultDevice\":{\"default_device\":0}}");
  EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(result.status().message().find("put it in quotes"), std::string::npos)
      << result.status();
}

TEST(DefaultDeviceTest, BadValuesAreInvalidParam) {
  for (const std::string value :
       {"\"-1\"", "\"01\"", "\"\"", "\"1.5\"", "\" 1\"", "\"1 \"", "\"abc\"", "\"+1\"",
        "\"2147483648\"", "\"99999999999999999999\"", "1", "-1", "true", "null", "[\"0\"]"}) {
    absl::StatusOr<InitConfig> result =
        ParseInitConfig(absl::StrCat("{\"defaultDevice\":{\"default_device\":", value, "}}"));
    EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << value;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("defaultDevice.default_device"), std::string::npos)
          << result.status();
    }
  }
}

TEST(DefaultDeviceTest, NonObjectIsInvalidParam) {
  EXPECT_EQ(ParseCode("{\"defaultDevice\":\"0\"}"), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"defaultDevice\":0}"), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"defaultDevice\":[]}"), ACL_ERROR_INVALID_PARAM);
}

// ---------------------------------------------------------------- StackSize --

uint64_t Aicore(const std::string& value) {
  return MustParse(absl::StrCat("{\"StackSize\":{\"aicore_stack_size\":", value, "}}"))
      .aicore_stack_size;
}
uint64_t Simt(const std::string& value) {
  return MustParse(absl::StrCat("{\"StackSize\":{\"simt_stack_size\":", value, "}}"))
      .simt_stack_size;
}
uint64_t SimtDivergence(const std::string& value) {
  return MustParse(absl::StrCat("{\"StackSize\":{\"simt_divergence_stack_size\":", value, "}}"))
      .simt_divergence_stack_size;
}

TEST(StackSizeTest, AicoreRoundsUpTo16KiBWithMinimum32KiB) {
  EXPECT_EQ(Aicore("0"), 32768u);
  EXPECT_EQ(Aicore("1"), 32768u);
  EXPECT_EQ(Aicore("16384"), 32768u);
  EXPECT_EQ(Aicore("32767"), 32768u);
  EXPECT_EQ(Aicore("32768"), 32768u);
  EXPECT_EQ(Aicore("32769"), 49152u);
  EXPECT_EQ(Aicore("49152"), 49152u);
  EXPECT_EQ(Aicore("65535"), 65536u);
  EXPECT_EQ(Aicore("196608"), 196608u);
  EXPECT_EQ(Aicore("4294950912"), 4294950912u);  // largest multiple of 16 KiB that fits uint32
}

TEST(StackSizeTest, SimtRoundsUpTo128) {
  EXPECT_EQ(Simt("0"), 0u);
  EXPECT_EQ(Simt("1"), 128u);
  EXPECT_EQ(Simt("128"), 128u);
  EXPECT_EQ(Simt("129"), 256u);
  EXPECT_EQ(Simt("1000"), 1024u);
  EXPECT_EQ(Simt("1152"), 1152u);
  EXPECT_EQ(SimtDivergence("1"), 128u);
  EXPECT_EQ(SimtDivergence("512"), 512u);
  EXPECT_EQ(SimtDivergence("513"), 640u);
}

TEST(StackSizeTest, AllThreeTogetherAndSettings) {
  InitConfig config = MustParse(
      "{\"StackSize\":{\"aicore_stack_size\":40000,\"simt_stack_size\":1000,"
      "\"simt_divergence_stack_size\":500,\"future_key\":\"x\"}}");
  EXPECT_EQ(config.aicore_stack_size, 49152u);
  EXPECT_EQ(config.simt_stack_size, 1024u);
  EXPECT_EQ(config.simt_divergence_stack_size, 512u);
  EXPECT_EQ(Setting(config, "StackSize.aicore_stack_size"), "49152");
  EXPECT_EQ(Setting(config, "StackSize.simt_stack_size"), "1024");
  EXPECT_EQ(Setting(config, "StackSize.simt_divergence_stack_size"), "512");
  EXPECT_EQ(Setting(config, "StackSize.future_key"), "\"x\"");
}

TEST(StackSizeTest, BadValuesAreInvalidParam) {
  for (const std::string key :
       {"aicore_stack_size", "simt_stack_size", "simt_divergence_stack_size"}) {
    for (const std::string value :
         {"\"32768\"", "-1", "-16384", "1.5", "true", "null", "[32768]", "{}", "1e300"}) {
      absl::StatusOr<InitConfig> result =
          ParseInitConfig(absl::StrCat("{\"StackSize\":{\"", key, "\":", value, "}}"));
      EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << key << "=" << value;
      if (!result.ok()) {
        EXPECT_NE(result.status().message().find("StackSize." + key), std::string::npos)
            << result.status();
      }
    }
  }
}

TEST(StackSizeTest, TooLargeAfterRoundingIsInvalidParam) {
  EXPECT_EQ(ParseCode("{\"StackSize\":{\"aicore_stack_size\":4294950913}}"),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"StackSize\":{\"aicore_stack_size\":5000000000}}"),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"StackSize\":{\"simt_stack_size\":4294967295}}"), ACL_ERROR_INVALID_PARAM);
  // Integers keep all 64 bits: rounding the largest up must not wrap to a small size.
  EXPECT_EQ(ParseCode("{\"StackSize\":{\"aicore_stack_size\":18446744073709551615}}"),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"StackSize\":{\"simt_stack_size\":18446744073709551615}}"),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Simt("4294967168"), 4294967168u);
}

TEST(StackSizeTest, NonObjectIsInvalidParam) {
  EXPECT_EQ(ParseCode("{\"StackSize\":32768}"), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"StackSize\":[]}"), ACL_ERROR_INVALID_PARAM);
}

// ------------------------------------------------------------ printf FIFOs --

TEST(FifoSizeTest, DefaultsWhenAbsent) {
  InitConfig config = MustParse("{}");
  EXPECT_EQ(config.simt_printf_fifo_size, 2u * 1024 * 1024);
  EXPECT_EQ(config.simd_printf_fifo_size_per_core, 32u * 1024);
}

TEST(FifoSizeTest, SimtRangeAndRounding) {
  auto simt = [](const std::string& v) {
    return ParseInitConfig(absl::StrCat("{\"simt_printf_fifo_size\":", v, "}"));
  };
  EXPECT_EQ(simt("1048576")->simt_printf_fifo_size, 1048576u);
  EXPECT_EQ(simt("1048569")->simt_printf_fifo_size, 1048576u);  // rounded up into range
  EXPECT_EQ(simt("2097153")->simt_printf_fifo_size, 2097160u);
  EXPECT_EQ(simt("67108864")->simt_printf_fifo_size, 67108864u);
  EXPECT_EQ(Setting(*simt("1048577"), "simt_printf_fifo_size"), "1048584");
  for (const std::string bad : {"1048568", "67108865", "0", "-8", "\"1048576\"", "1048576.5",
                                "true", "18446744073709551615"}) {
    absl::StatusOr<InitConfig> result = simt(bad);
    EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << bad;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("simt_printf_fifo_size"), std::string::npos)
          << result.status();
      EXPECT_NE(result.status().message().find("67108864"), std::string::npos) << result.status();
    }
  }
}

TEST(FifoSizeTest, SimdRangeAndRounding) {
  auto simd = [](const std::string& v) {
    return ParseInitConfig(absl::StrCat("{\"simd_printf_fifo_size_per_core\":", v, "}"));
  };
  EXPECT_EQ(simd("1024")->simd_printf_fifo_size_per_core, 1024u);
  EXPECT_EQ(simd("1017")->simd_printf_fifo_size_per_core, 1024u);
  EXPECT_EQ(simd("12345")->simd_printf_fifo_size_per_core, 12352u);
  EXPECT_EQ(simd("67108864")->simd_printf_fifo_size_per_core, 67108864u);
  for (const std::string bad : {"1016", "1", "0", "67108865", "\"1024\"", "-1024", "null"}) {
    EXPECT_EQ(CodeOf(simd(bad)), ACL_ERROR_INVALID_PARAM) << bad;
  }
}

TEST(FifoSizeTest, NestedKeysAreNotTheTopLevelSetting) {
  // CANN looks these keys up at the top level only; nested, they are unknown.
  InitConfig config = MustParse("{\"StackSize\":{\"simt_printf_fifo_size\":1}}");
  EXPECT_EQ(config.simt_printf_fifo_size, 2u * 1024 * 1024);
  EXPECT_EQ(Setting(config, "StackSize.simt_printf_fifo_size"), "1");
}

// ---------------------------------------------------------- max_opqueue_num --

TEST(MaxOpQueueNumTest, NumberOrDigitString) {
  EXPECT_EQ(MustParse("{}").max_opqueue_num, 20000u);
  EXPECT_EQ(MustParse("{\"max_opqueue_num\":10000}").max_opqueue_num, 10000u);
  EXPECT_EQ(MustParse("{\"max_opqueue_num\":1}").max_opqueue_num, 1u);
  InitConfig config = MustParse("{\"max_opqueue_num\":\"20000\"}");
  EXPECT_EQ(config.max_opqueue_num, 20000u);
  EXPECT_EQ(Setting(config, "max_opqueue_num"), "20000");
}

TEST(MaxOpQueueNumTest, BadValuesAreInvalidParam) {
  for (const std::string value : {"0", "\"0\"", "-1", "\"-1\"", "\"12abc\"", "\"\"", "1.5",
                                  "\"1.5\"", "true", "null", "[1]", "\"99999999999999999999\""}) {
    absl::StatusOr<InitConfig> result =
        ParseInitConfig(absl::StrCat("{\"max_opqueue_num\":", value, "}"));
    EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << value;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("max_opqueue_num"), std::string::npos)
          << result.status();
    }
  }
}

// ------------------------------------------------------------- unknown keys --

TEST(UnknownKeysTest, AcceptedAndKeptAsJsonSorted) {
  InitConfig config = MustParse(
      "{\"profiler\":{\"switch\":\"on\",\"output\":\"/tmp\"},\"zeta\":1,\"alpha\":\"x\","
      "\"acl_graph\":{\"event_mode\":\"1\"},\"list\":[true,null,2.5],\"err_msg_mode\":\"1\"}");
  EXPECT_EQ(config.err_msg_mode, 1);
  const Settings expected = {
      {"acl_graph", "{\"event_mode\":\"1\"}"},
      {"alpha", "\"x\""},
      {"err_msg_mode", "1"},
      {"list", "[true,null,2.5]"},
      {"profiler", "{\"output\":\"/tmp\",\"switch\":\"on\"}"},
      {"zeta", "1"},
  };
  EXPECT_EQ(config.settings, expected);
}

TEST(SettingsTest, EveryRecognisedKeyIsNormalised) {
  InitConfig config = MustParse(
      "{\"err_msg_mode\":\"0\",\"defaultDevice\":{\"default_device\":\"1\"},"
      "\"StackSize\":{\"aicore_stack_size\":1},\"simt_printf_fifo_size\":1048577,"
      "\"simd_printf_fifo_size_per_core\":1025,\"max_opqueue_num\":\"5\","
      "\"dump\":{\"dump_scene\":\"lite_exception\"}}");
  const Settings expected = {
      {"StackSize.aicore_stack_size", "32768"},
      {"defaultDevice.default_device", "1"},
      {"dump.dump_scene", "lite_exception"},
      {"err_msg_mode", "0"},
      {"max_opqueue_num", "5"},
      {"simd_printf_fifo_size_per_core", "1032"},
      {"simt_printf_fifo_size", "1048584"},
  };
  EXPECT_EQ(config.settings, expected);
}

// --------------------------------------------------------------------- dump --

InitConfig MustParseDump(const std::string& body) { return MustParse(Dump(body)); }

void ExpectDumpError(const std::string& body, const std::string& expected_text) {
  absl::StatusOr<InitConfig> result = ParseInitConfig(Dump(body));
  EXPECT_EQ(CodeOf(result), ACL_ERROR_INVALID_PARAM) << body << " -> " << result.status();
  if (!result.ok() && !expected_text.empty()) {
    EXPECT_NE(result.status().message().find(expected_text), std::string::npos)
        << body << " -> " << result.status() << "\nexpected to mention: " << expected_text;
  }
}

TEST(DumpTest, AbsentOrEmptyBlockEnablesNothing) {
  EXPECT_EQ(MustParse("{}").dump_kind, DumpKind::kNone);
  EXPECT_EQ(MustParse("{\"dump\":{}}").dump_kind, DumpKind::kNone);
}

TEST(DumpTest, BlockMustBeAnObject) {
  EXPECT_EQ(ParseCode("{\"dump\":\"on\"}"), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"dump\":[]}"), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ParseCode("{\"dump\":null}"), ACL_ERROR_INVALID_PARAM);
}

TEST(DumpTest, DocumentedModelDumpExample) {
  InitConfig config = MustParseDump(
      "\"dump_list\":[{\"model_name\":\"ResNet-101\"},{\"model_name\":\"ResNet-50\",\"layer\":"
      "[\"conv1conv1_relu\",\"res2a_branch2ares2a_branch2a_relu\",\"res2a_branch1\",\"pool1\"]}],"
      "\"dump_path\":\"/home/"
      "output\",\"dump_mode\":\"output\",\"dump_op_switch\":\"off\",\"dump_data\":\"tensor\"");
  EXPECT_EQ(config.dump_kind, DumpKind::kData);
  EXPECT_EQ(config.dump_path, "/home/output");
  EXPECT_EQ(Setting(config, "dump.dump_path"), "/home/output");
  EXPECT_EQ(Setting(config, "dump.dump_mode"), "output");
  // Object keys come out sorted, whatever protobuf's map order.
  EXPECT_EQ(Setting(config, "dump.dump_list"),
            "[{\"model_name\":\"ResNet-101\"},{\"layer\":[\"conv1conv1_relu\",\"res2a_"
            "branch2ares2a_branch2a_relu\","
            "\"res2a_branch1\",\"pool1\"],\"model_name\":\"ResNet-50\"}]");
}

TEST(DumpTest, DocumentedSingleOpDumpExamples) {
  EXPECT_EQ(MustParseDump("\"dump_path\":\"output\",\"dump_list\":[],\"dump_op_switch\":\"on\","
                          "\"dump_data\":\"tensor\"")
                .dump_kind,
            DumpKind::kData);
  EXPECT_EQ(
      MustParseDump("\"dump_path\":\"/home/output\",\"dump_list\":[{}],\"dump_op_switch\":\"on\","
                    "\"dump_data\":\"tensor\"")
          .dump_kind,
      DumpKind::kData);
}

TEST(DumpTest, DumpPathIsRequiredOutsideExceptionDump) {
  ExpectDumpError("\"dump_list\":[{\"model_name\":\"m\"}]", "dump.dump_path is required");
  ExpectDumpError("\"dump_op_switch\":\"on\"", "dump.dump_path is required");
  ExpectDumpError("\"dump_debug\":\"on\"", "dump.dump_path is required");
  ExpectDumpError("\"dump_scene\":\"watcher\",\"dump_list\":[{\"watcher_nodes\":[\"C\"]}]",
                  "dump.dump_path is required");
  ExpectDumpError("\"dump_mode\":\"all\"",
                  "dump.dump_path is required");  // options alone, as adump
  ExpectDumpError("\"dump_path\":\"\",\"dump_op_switch\":\"on\"",
                  "dump.dump_path must not be empty");
}

TEST(DumpTest, DumpPathLength) {
  EXPECT_EQ(MustParseDump(absl::StrCat("\"dump_path\":\"", std::string(512, 'p'), "\"")).dump_kind,
            DumpKind::kNone);
  ExpectDumpError(absl::StrCat("\"dump_path\":\"", std::string(513, 'p'), "\""), "at most 512");
}

TEST(DumpTest, PathAloneIsValidButEnablesNothing) {
  InitConfig config = MustParseDump("\"dump_path\":\"/tmp/d\",\"dump_op_switch\":\"off\"");
  EXPECT_EQ(config.dump_kind, DumpKind::kNone);
  EXPECT_EQ(config.dump_path, "/tmp/d");
}

TEST(DumpTest, ExceptionDumpScenes) {
  for (const std::string scene :
       {"lite_exception", "aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump"}) {
    InitConfig config = MustParseDump(absl::StrCat("\"dump_scene\":\"", scene, "\""));
    EXPECT_EQ(config.dump_kind, DumpKind::kException) << scene;
    EXPECT_EQ(Setting(config, "dump.dump_scene"), scene);
    EXPECT_EQ(MustParseDump(absl::StrCat("\"dump_scene\":\"", scene, "\",\"dump_path\":\"output\""))
                  .dump_kind,
              DumpKind::kException);
  }
}

TEST(DumpTest, ExceptionDumpExcludesModelSingleOpAndOverflowDump) {
  const std::string scene = "\"dump_scene\":\"aic_err_brief_dump\",\"dump_path\":\"output\",";
  ExpectDumpError(scene + "\"dump_list\":[{\"model_name\":\"m\"}]",
                  "exception dump cannot be combined");
  ExpectDumpError(scene + "\"dump_list\":[]", "dump.dump_list cannot be set");
  ExpectDumpError(scene + "\"dump_op_switch\":\"on\"", "dump.dump_op_switch cannot be set");
  ExpectDumpError(scene + "\"dump_op_switch\":\"off\"", "dump.dump_op_switch cannot be set");
  ExpectDumpError(scene + "\"dump_debug\":\"on\"", "dump.dump_debug cannot be set");
  for (const std::string option :
       {"\"dump_mode\":\"all\"", "\"dump_level\":\"op\"", "\"dump_data\":\"tensor\"",
        "\"dump_kernel_data\":\"all\"", "\"dump_step\":\"1\"",
        "\"dump_stats\":[\"Max\"],\"dump_data\":\"stats\""}) {
    ExpectDumpError("\"dump_scene\":\"lite_exception\"," + option,
                    "cannot be set when dump.dump_scene is");
  }
}

TEST(DumpTest, OverflowDump) {
  InitConfig config = MustParseDump("\"dump_path\":\"output\",\"dump_debug\":\"on\"");
  EXPECT_EQ(config.dump_kind, DumpKind::kOverflow);
  EXPECT_EQ(
      MustParseDump("\"dump_path\":\"output\",\"dump_debug\":\"on\",\"dump_op_switch\":\"off\"")
          .dump_kind,
      DumpKind::kOverflow);
  EXPECT_EQ(MustParseDump("\"dump_path\":\"output\",\"dump_debug\":\"off\"").dump_kind,
            DumpKind::kNone);
}

TEST(DumpTest, OverflowDumpExcludesModelAndSingleOpDump) {
  ExpectDumpError("\"dump_path\":\"output\",\"dump_debug\":\"on\",\"dump_op_switch\":\"on\"",
                  "overflow dump cannot be combined with single-op dump");
  ExpectDumpError(
      "\"dump_path\":\"output\",\"dump_debug\":\"on\",\"dump_list\":[{\"model_name\":\"m\"}]",
      "overflow dump cannot be combined with model dump");
  ExpectDumpError("\"dump_path\":\"output\",\"dump_debug\":\"on\",\"dump_list\":[]",
                  "dump.dump_list");
}

TEST(DumpTest, DocumentedWatcherExample) {
  InitConfig config = MustParseDump(
      "\"dump_list\":[{\"layer\":[\"A\",\"B\"],\"watcher_nodes\":[\"C\",\"D\"]}],\"dump_path\":\"/"
      "home/\","
      "\"dump_mode\":\"output\",\"dump_level\":\"op\",\"dump_scene\":\"watcher\"");
  EXPECT_EQ(config.dump_kind, DumpKind::kWatcher);
  EXPECT_EQ(MustParseDump("\"dump_list\":[{\"watcher_nodes\":[\"C\"]}],\"dump_path\":\"out\","
                          "\"dump_scene\":\"watcher\"")
                .dump_kind,
            DumpKind::kWatcher);
}

TEST(DumpTest, WatcherExcludesOverflowAndOpSwitch) {
  const std::string watcher =
      "\"dump_scene\":\"watcher\",\"dump_path\":\"out\",\"dump_list\":[{\"watcher_nodes\":[\"C\"]}]"
      ",";
  ExpectDumpError(watcher + "\"dump_debug\":\"on\"",
                  "watcher mode cannot be combined with overflow dump");
  ExpectDumpError(watcher + "\"dump_op_switch\":\"on\"",
                  "watcher mode cannot be combined with single-op dump");
  ExpectDumpError(watcher + "\"dump_mode\":\"all\"", "only \"output\"");
  ExpectDumpError(watcher + "\"dump_step\":\"1\"", "dump.dump_step cannot be set");
  ExpectDumpError(watcher + "\"dump_data\":\"tensor\"", "dump.dump_data cannot be set");
  EXPECT_EQ(
      MustParse(Dump(watcher + "\"dump_debug\":\"off\",\"dump_op_switch\":\"off\"")).dump_kind,
      DumpKind::kWatcher);
}

TEST(DumpTest, WatcherNodesRules) {
  ExpectDumpError(
      "\"dump_scene\":\"watcher\",\"dump_path\":\"out\",\"dump_list\":[{\"layer\":[\"A\"]}]",
      "watcher_nodes must list at least one operator");
  ExpectDumpError(
      "\"dump_scene\":\"watcher\",\"dump_path\":\"out\",\"dump_list\":[{\"model_name\":\"m\","
      "\"watcher_nodes\":[\"C\"]}]",
      "model_name cannot be set");
  ExpectDumpError(
      "\"dump_path\":\"out\",\"dump_list\":[{\"model_name\":\"m\",\"watcher_nodes\":[\"C\"]}]",
      "only allowed when dump.dump_scene is \"watcher\"");
}

TEST(DumpTest, FieldTypes) {
  ExpectDumpError("\"dump_path\":1", "dump.dump_path must be a string");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_scene\":true", "dump.dump_scene must be a string");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_op_switch\":1",
                  "dump.dump_op_switch must be a string");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":{}",
                  "dump.dump_list must be an array of objects");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[\"m\"]",
                  "dump.dump_list[0] must be an object");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"model_name\":1}]",
                  "dump.dump_list[0].model_name");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"layer\":\"A\"}]",
                  "dump.dump_list[0].layer");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"layer\":[1]}]",
                  "dump.dump_list[0].layer[0]");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_stats\":\"Max\",\"dump_data\":\"stats\"",
                  "dump.dump_stats");
  ExpectDumpError(
      "\"dump_path\":\"o\",\"dump_list\":[{\"opname_range\":[{\"begin\":1,\"end\":\"b\"}]}]",
      "opname_range[0].begin");
  ExpectDumpError(
      "\"dump_path\":\"o\",\"dump_list\":[{\"optype_blacklist\":[{\"name\":\"Add\",\"pos\":"
      "\"input0\"}]}]",
      "optype_blacklist[0].pos");
}

TEST(DumpTest, EnumeratedValues) {
  ExpectDumpError("\"dump_path\":\"o\",\"dump_mode\":\"both\"",
                  "dump.dump_mode \"both\" is not allowed");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_mode\":\"\"", "dump.dump_mode must not be empty");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_level\":\"layer\"", "op|kernel|all");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_data\":\"bits\"", "tensor|stats");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_op_switch\":\"yes\"", "on|off");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_debug\":\"ON\"", "on|off");
  ExpectDumpError("\"dump_scene\":\"exception\"", "lite_exception|aic_err_brief_dump");
  ExpectDumpError("\"dump_scene\":\"\"", "dump.dump_scene must not be empty");
  for (const std::string mode : {"input", "output", "all"}) {
    EXPECT_EQ(MustParseDump("\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_mode\":\"" +
                            mode + "\"")
                  .dump_kind,
              DumpKind::kData);
  }
}

TEST(DumpTest, KernelData) {
  EXPECT_EQ(
      MustParseDump("\"dump_path\":\"/home/\",\"dump_kernel_data\":\"printf,assert\"").dump_kind,
      DumpKind::kNone);
  MustParseDump("\"dump_path\":\"/home/\",\"dump_kernel_data\":\"all\"");
  ExpectDumpError("\"dump_path\":\"/home/\",\"dump_kernel_data\":\"printf,foo\"", "\"foo\"");
  ExpectDumpError("\"dump_path\":\"/home/\",\"dump_kernel_data\":\"printf,\"", "must not be empty");
  ExpectDumpError("\"dump_kernel_data\":\"printf\"", "dump.dump_path is required");
}

TEST(DumpTest, DumpStats) {
  MustParseDump(
      "\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_data\":\"stats\","
      "\"dump_stats\":[\"Max\",\"Min\",\"Avg\",\"Nan\",\"Negative Inf\",\"Positive "
      "Inf\",\"L2norm\"]");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_stats\":[\"Max\"]",
                  "requires dump.dump_data \"stats\"");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_data\":\"stats\",\"dump_stats\":[]",
                  "must not be an empty array");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_data\":\"stats\",\"dump_stats\":[\"max\"]",
                  "dump.dump_stats[0]");
}

TEST(DumpTest, DumpStep) {
  MustParseDump("\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_step\":\"0|3-5|10\"");
  MustParseDump("\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_step\":\"\"");
  MustParseDump("\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_step\":\"7-7\"");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_step\":\"5-3\"", "start is after its end");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_step\":\"a\"", "malformed");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_step\":\"1-2-3\"", "malformed");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_step\":\"1|\"", "malformed");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_step\":\"-1\"", "malformed");
  std::vector<std::string> steps;
  for (int i = 0; i < 100; ++i) steps.push_back(absl::StrCat(i));
  MustParseDump(
      absl::StrCat("\"dump_path\":\"o\",\"dump_step\":\"", absl::StrJoin(steps, "|"), "\""));
  steps.push_back("100");
  ExpectDumpError(
      absl::StrCat("\"dump_path\":\"o\",\"dump_step\":\"", absl::StrJoin(steps, "|"), "\""),
      "at most 100");
}

TEST(DumpTest, DumpListItems) {
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"model_name\":\"\"}]",
                  "model_name must not be empty");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"model_name\":\"m\",\"layer\":[]}]",
                  "layer must not be an empty array");
  // With dump_op_switch "on" those two checks do not apply (adump CheckDumpListItems).
  EXPECT_EQ(
      MustParseDump(
          "\"dump_path\":\"o\",\"dump_op_switch\":\"on\",\"dump_list\":[{\"model_name\":\"\"}]")
          .dump_kind,
      DumpKind::kData);
}

TEST(DumpTest, Blacklists) {
  const std::string ok_item =
      "{\"model_name\":\"m\",\"optype_blacklist\":[{\"name\":\"Add\",\"pos\":[\"input0\","
      "\"output12\",\"\"]}],"
      "\"opname_blacklist\":[{\"name\":\"conv1\"}]}";
  MustParseDump("\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[" + ok_item + "]");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[" + ok_item + "]",
                  "requires dump.dump_level \"op\"");
  ExpectDumpError(
      "\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{\"optype_blacklist\":[{\"name\":"
      "\"Add\","
      "\"pos\":[\"in0\"]}]}]",
      "\"in0\" is malformed");
  ExpectDumpError(
      "\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{\"optype_blacklist\":[{\"name\":"
      "\"Add\","
      "\"pos\":[\"input\"]}]}]",
      "malformed");
  std::vector<std::string> entries(101, "{\"name\":\"Add\"}");
  ExpectDumpError(
      absl::StrCat(
          "\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{\"opname_blacklist\":[",
          absl::StrJoin(entries, ","), "]}]"),
      "at most 100");
}

TEST(DumpTest, OpNameRange) {
  const std::string range = "\"opname_range\":[{\"begin\":\"a\",\"end\":\"b\"}]";
  MustParseDump("\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{\"model_name\":\"m\"," +
                range + "}]");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_list\":[{\"model_name\":\"m\"," + range + "}]",
                  "requires dump.dump_level \"op\"");
  ExpectDumpError("\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{" + range + "}]",
                  "requires a non-empty dump.dump_list[0].model_name");
  ExpectDumpError(
      "\"dump_path\":\"o\",\"dump_level\":\"op\",\"dump_list\":[{\"model_name\":\"m\","
      "\"opname_range\":[{\"begin\":\"a\"}]}]",
      "needs both a non-empty \"begin\" and a non-empty \"end\"");
}

TEST(DumpTest, UnknownDumpKeysAreKept) {
  InitConfig config = MustParseDump("\"dump_scene\":\"lite_exception\",\"future\":{\"x\":1}");
  EXPECT_EQ(config.dump_kind, DumpKind::kException);
  EXPECT_EQ(Setting(config, "dump.future"), "{\"x\":1}");
}

TEST(DumpTest, DumpKindNames) {
  EXPECT_STREQ(DumpKindName(DumpKind::kNone), "none");
  EXPECT_STREQ(DumpKindName(DumpKind::kData), "data");
  EXPECT_STREQ(DumpKindName(DumpKind::kException), "exception");
  EXPECT_STREQ(DumpKindName(DumpKind::kOverflow), "overflow");
  EXPECT_STREQ(DumpKindName(DumpKind::kWatcher), "watcher");
}

// A realistic file: what torch_npu writes as acl_default.json with CANN >= 8.3.
TEST(ParseInitConfigTest, TorchNpuDefaultConfig) {
  InitConfig config = MustParse(
      "{\n    \"dump\": {\"dump_scene\": \"lite_exception\"},\n"
      "    \"defaultDevice\": {\"default_device\": \"0\"}\n}\n");
  EXPECT_EQ(config.dump_kind, DumpKind::kException);
  ASSERT_TRUE(config.default_device.has_value());
  EXPECT_EQ(*config.default_device, 0);
}

}  // namespace
}  // namespace acl_client
