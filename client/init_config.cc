// aclInit config reader and validator (SPEC 4 and 4.1). The `dump` block has
// rules of its own, in init_config_dump.cc.
//
// The rules mirror what CANN's aclInit does with the same file, so that a
// config that works there works here and one that fails there fails here with
// the same aclError; where we knowingly differ, the rule says so.
//
// Reading the file:
//   - nullptr or "" -> empty config, no file is read.
//   - path that does not resolve, is not a regular file (e.g. a directory),
//     is larger than 10 MiB or cannot be opened -> ACL_ERROR_INVALID_FILE.
//   - a file of 0 bytes -> empty config.
// Parsing (everything here -> ACL_ERROR_PARSE_FILE):
//   - `{` nesting deeper than 10 or `[` nesting deeper than 10, counted
//     separately, before parsing. CANN counts every brace in the file, even
//     inside strings; we do not count braces inside JSON strings (a
//     deliberate, more lenient difference).
//   - content that is not JSON. The parser is nlohmann::json, as in CANN, so
//     strictness matches: RFC 8259 only (no comments, single quotes, trailing
//     commas, unquoted keys, NaN, or numbers beyond double range).
//     Two of its documented behaviours are CANN's too and so are ours:
//       * a key repeated in one object keeps its last value (the earlier
//         values are neither checked nor kept);
//       * a NUL byte outside a string ends the JSON text: the bytes after it
//         are not parsed (the content is still kept and passed on whole).
//   - whitespace-only content (e.g. a file made by `echo > acl.json`) is NOT an
//     empty config: CANN hands the non-zero-length buffer to the parser,
//     which rejects it. Same here, with a message that says what to write.
//   - a leading UTF-8 byte order mark is skipped (nlohmann skips it).
//   - top-level value that is not an object (`[1]`, `3`, `"x"`, `null`) is
//     accepted as a config without keys: CANN looks every key up in the
//     parsed value, which finds nothing in a non-object.
// Keys (an invalid value -> ACL_ERROR_INVALID_PARAM, as SPEC 4 / 4.1 say):
//   - err_msg_mode: the JSON string "0" or "1" only (CANN compares the
//     value's JSON text with "\"0\"" and "\"1\"", so the number 0 fails there
//     too).
//   - defaultDevice: must be an object (CANN's lookup inside a non-object
//     fails). defaultDevice.default_device: a JSON string holding "0" or a
//     positive decimal integer without leading zeros (CANN reads it as a
//     string, so a JSON number fails). Must fit int32. Range against the
//     device count is the daemon's job.
//   - StackSize: must be an object (CANN ignores a non-object; we reject it as
//     meaningless). aicore_stack_size / simt_stack_size /
//     simt_divergence_stack_size: JSON numbers (CANN reads them as numbers, so
//     a string fails), non-negative integers. aicore: below 32 KiB -> 32 KiB,
//     else rounded up to a multiple of 16 KiB; simt ones: rounded up to a
//     multiple of 128 (SPEC 4.1). After rounding each must fit uint32 (the
//     device limit it sets is a uint32); the product-specific maxima are not
//     applied to the simulated device.
//   - simt_printf_fifo_size / simd_printf_fifo_size_per_core: top-level keys
//     (CANN looks them up at the top level), positive JSON integers (a string
//     fails there); rounded up to a multiple of 8, then 1 MiB..64 MiB and
//     1 KiB..64 MiB (SPEC 4.1).
//   - max_opqueue_num: a positive integer given as a number or a string of
//     digits, at most INT64_MAX (CANN strips the quotes and reads a long with
//     strtol; we refuse trailing junk and fractions that strtol would
//     silently cut off).
//   - any other key, at any level: accepted and kept (settings) unchanged.
// A number written with a fraction or an exponent (32768.0, 3.2768e4) counts
// as an integer when it is a whole number that a double holds exactly.
#include "client/init_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "acl/acl_base.h"
#include "client/init_config_dump.h"
#include "client/init_config_json.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

using config_json::CompactJson;
using config_json::IsDigits;
using config_json::MembersOf;
using config_json::Quoted;
using config_json::Shown;
using config_json::StringOf;
using nlohmann::json;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();

// Settings collected while validating, kept sorted by dotted key.
using SettingsMap = std::map<std::string, std::string>;

// ---------------------------------------------------------------- messages --

// `where` names the config: `file "/etc/acl.json"` or `content`.
absl::Status FileError(const std::string& path, absl::string_view detail) {
  return acld::AclStatus(ACL_ERROR_INVALID_FILE,
                         absl::StrCat("aclInit config file \"", path, "\" ", detail));
}

absl::Status ParseError(const std::string& where, absl::string_view detail) {
  return acld::AclStatus(ACL_ERROR_PARSE_FILE,
                         absl::StrCat("aclInit config ", where, " is not valid JSON: ", detail));
}

absl::Status InvalidParam(const std::string& where, absl::string_view detail) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("aclInit config ", where, ": ", detail));
}

// ----------------------------------------------------------------- parsing --

std::string Position(absl::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat("line ", line, ", column ", column);
}

// SPEC 4 bounds `{` and `[` nesting at 10 levels each. nlohmann has no depth
// limit of its own, and counting before parsing also keeps a hostile file of
// 10 MiB of `[` from being built into a tree first. Only strings need
// recognising here: whatever else is malformed, the parser reports.
absl::Status CheckNesting(absl::string_view text, const std::string& where) {
  int object_depth = 0;
  int array_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // an escaped character, even '"', does not end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
        if (++object_depth > kMaxConfigObjectDepth) {
          return ParseError(
              where, absl::StrCat("'{' nesting exceeds the maximum of ", kMaxConfigObjectDepth,
                                  " levels at ", Position(text, i)));
        }
        break;
      case '[':
        if (++array_depth > kMaxConfigArrayDepth) {
          return ParseError(
              where, absl::StrCat("'[' nesting exceeds the maximum of ", kMaxConfigArrayDepth,
                                  " levels at ", Position(text, i)));
        }
        break;
      case '}':
        if (object_depth > 0) --object_depth;
        break;
      case ']':
        if (array_depth > 0) --array_depth;
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

// nlohmann::json::parse(..., allow_exceptions=false) only tells *that* a text
// is not JSON. Its SAX interface hands the same diagnosis (with line and
// column) to parse_error() as an object instead of throwing it, so one more,
// SAX-only pass over a rejected text says why, still without exceptions.
class ParseErrorRecorder final : public json::json_sax_t {
 public:
  const std::string& message() const { return message_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const json::exception& error) override {
    message_ = error.what();
    return false;  // stop at the first error, as parse() does
  }

 private:
  std::string message_;
};

// Why nlohmann rejects `content`, e.g. "parse error at line 3, column 3:
// syntax error while parsing object key - invalid literal; last read: ...".
std::string WhyNotJson(const std::string& content) {
  ParseErrorRecorder recorder;
  json::sax_parse(content, &recorder);
  std::string message = recorder.message();
  if (message.empty()) return "syntax error";
  // Drop the "[json.exception.parse_error.101] " tag: it means nothing to the
  // application's user.
  if (message[0] == '[') {
    if (const size_t end = message.find("] "); end != std::string::npos) message.erase(0, end + 2);
  }
  // nlohmann quotes the token it was reading, which for an unterminated string
  // is the rest of the file (up to 10 MiB); the position comes first and stays.
  return config_json::Shortened(std::move(message), 240);
}

// ------------------------------------------------------------ value access --

// The value when `v` is a JSON number holding an integer >= 0 (see the top of
// this file for numbers written with a fraction or an exponent).
std::optional<uint64_t> AsNonNegativeInteger(const json& v) {
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) return *u;
  if (const auto* i = v.get_ptr<const json::number_integer_t*>()) {
    if (*i < 0) return std::nullopt;
    return static_cast<uint64_t>(*i);  // "-0"
  }
  if (const auto* f = v.get_ptr<const json::number_float_t*>()) {
    const double d = *f;
    if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d > 9007199254740992.0) {
      return std::nullopt;
    }
    return static_cast<uint64_t>(d);
  }
  return std::nullopt;
}

// Rounds up to a multiple of `multiple`, saturating: a size read from the file
// may be close to UINT64_MAX, and the caller's range check must still see it
// as too large rather than wrapped round to a small value.
uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  const uint64_t remainder = value % multiple;
  if (remainder == 0) return value;
  const uint64_t up = multiple - remainder;
  return value > std::numeric_limits<uint64_t>::max() - up ? std::numeric_limits<uint64_t>::max()
                                                           : value + up;
}

// ------------------------------------------------------------ simple keys --

absl::Status CheckErrMsgMode(const json& v, const std::string& where, InitConfig& config,
                             SettingsMap& settings) {
  if (v.is_string() && (StringOf(v) == "0" || StringOf(v) == "1")) {
    config.err_msg_mode = StringOf(v) == "1" ? 1 : 0;
    settings["err_msg_mode"] = StringOf(v);
    return absl::OkStatus();
  }
  return InvalidParam(where,
                      absl::StrCat("err_msg_mode must be the string \"0\" (thread-level) or \"1\" "
                                   "(process-level), got ",
                                   Shown(v)));
}

absl::Status CheckDefaultDevice(const json& v, const std::string& where, InitConfig& config,
                                SettingsMap& settings) {
  if (!v.is_object()) {
    return InvalidParam(where, absl::StrCat("defaultDevice must be a JSON object such as "
                                            "{\"default_device\": \"0\"}, got ",
                                            Shown(v)));
  }
  for (const auto& [key, value] : MembersOf(v)) {
    const std::string dotted = absl::StrCat("defaultDevice.", key);
    if (key != "default_device") {
      settings[dotted] = CompactJson(value);
      continue;
    }
    const std::string hint =
        "defaultDevice.default_device must be a string holding 0 or a positive decimal integer "
        "without leading zeros, such as \"0\"";
    if (!value.is_string()) {
      return InvalidParam(
          where,
          absl::StrCat(
              hint, "; got ", Shown(value),
              value.is_number() ? " (CANN reads this key as a string: put it in quotes)" : ""));
    }
    const std::string& text = StringOf(value);
    int32_t id = 0;
    const bool canonical = IsDigits(text) && (text == "0" || text[0] != '0');
    if (!canonical) return InvalidParam(where, absl::StrCat(hint, "; got ", Quoted(text)));
    if (!absl::SimpleAtoi(text, &id)) {
      return InvalidParam(where, absl::StrCat("defaultDevice.default_device ", Quoted(text),
                                              " is too large (a device id is at most 2147483647)"));
    }
    config.default_device = id;
    settings[dotted] = text;
  }
  return absl::OkStatus();
}

absl::Status CheckStackSize(const json& v, const std::string& where, InitConfig& config,
                            SettingsMap& settings) {
  if (!v.is_object()) {
    return InvalidParam(where, absl::StrCat("StackSize must be a JSON object such as "
                                            "{\"aicore_stack_size\": 32768}, got ",
                                            Shown(v)));
  }
  for (const auto& [key, value] : MembersOf(v)) {
    const std::string dotted = absl::StrCat("StackSize.", key);
    uint64_t* target = nullptr;
    uint64_t multiple = 0;
    if (key == "aicore_stack_size") {
      target = &config.aicore_stack_size;
      multiple = 16 * kKiB;
    } else if (key == "simt_stack_size") {
      target = &config.simt_stack_size;
      multiple = 128;
    } else if (key == "simt_divergence_stack_size") {
      target = &config.simt_divergence_stack_size;
      multiple = 128;
    } else {
      settings[dotted] = CompactJson(value);
      continue;
    }
    const std::optional<uint64_t> raw = AsNonNegativeInteger(value);
    if (!raw) {
      return InvalidParam(where, absl::StrCat(dotted,
                                              " must be a non-negative integer number of bytes "
                                              "(a JSON number, not a string), got ",
                                              Shown(value)));
    }
    uint64_t size = RoundUp(*raw, multiple);
    if (key == "aicore_stack_size" && size < 32 * kKiB) size = 32 * kKiB;
    if (size > kUint32Max) {
      return InvalidParam(
          where, absl::StrCat(dotted, " ", *raw, " is too large: rounded up to a multiple of ",
                              multiple, " it must not exceed ", kUint32Max, " bytes"));
    }
    *target = size;
    settings[dotted] = absl::StrCat(size);
  }
  return absl::OkStatus();
}

absl::Status CheckFifoSize(const std::string& key, const json& v, uint64_t min, uint64_t max,
                           const std::string& where, uint64_t& target, SettingsMap& settings) {
  const std::string allowed =
      absl::StrCat("a positive integer number of bytes (a JSON number) from ", min, " to ", max,
                   ", rounded up to a multiple of 8");
  const std::optional<uint64_t> raw = AsNonNegativeInteger(v);
  if (!raw || *raw == 0) {
    return InvalidParam(where, absl::StrCat(key, " must be ", allowed, "; got ", Shown(v)));
  }
  const uint64_t size = RoundUp(*raw, 8);
  if (size < min || size > max) {
    return InvalidParam(where,
                        absl::StrCat(key, " ", *raw, " is out of range: it must be ", allowed));
  }
  target = size;
  settings[key] = absl::StrCat(size);
  return absl::OkStatus();
}

absl::Status CheckMaxOpQueueNum(const json& v, const std::string& where, InitConfig& config,
                                SettingsMap& settings) {
  std::optional<uint64_t> count;
  if (v.is_number()) {
    count = AsNonNegativeInteger(v);
  } else if (IsDigits(StringOf(v))) {
    uint64_t parsed = 0;
    if (absl::SimpleAtoi(StringOf(v), &parsed)) count = parsed;
  }
  if (!count || *count == 0 ||
      *count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidParam(
        where, absl::StrCat("max_opqueue_num must be a positive integer (a number or a string "
                            "of digits such as \"20000\") of at most ",
                            std::numeric_limits<int64_t>::max(), ", got ", Shown(v)));
  }
  config.max_opqueue_num = *count;
  settings["max_opqueue_num"] = absl::StrCat(*count);
  return absl::OkStatus();
}

absl::Status CheckDump(const json& v, const std::string& where, InitConfig& config,
                       SettingsMap& settings) {
  absl::StatusOr<DumpConfig> dump = CheckDumpConfig(v);
  if (!dump.ok()) return InvalidParam(where, dump.status().message());
  config.dump_kind = dump->kind;
  config.dump_path = std::move(dump->path);
  for (const auto& [key, value] : MembersOf(v)) {
    settings[absl::StrCat("dump.", key)] = value.is_string() ? StringOf(value) : CompactJson(value);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------ driver --

absl::StatusOr<InitConfig> Parse(std::string content, const std::string& where) {
  InitConfig config;
  config.content = std::move(content);
  if (config.content.empty()) return config;

  absl::string_view text = config.content;
  if (absl::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  if (absl::StripAsciiWhitespace(text).empty()) {
    return ParseError(where,
                      "it holds only whitespace (for an empty config use a 0-byte file or {})");
  }
  if (auto s = CheckNesting(text, where); !s.ok()) return s;

  const json root = json::parse(config.content, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return ParseError(where, WhyNotJson(config.content));

  SettingsMap settings;
  // A non-object top level has no members: a config without keys, as in CANN.
  for (const auto& [key, value] : MembersOf(root)) {
    absl::Status status;
    if (key == "err_msg_mode") {
      status = CheckErrMsgMode(value, where, config, settings);
    } else if (key == "defaultDevice") {
      status = CheckDefaultDevice(value, where, config, settings);
    } else if (key == "StackSize") {
      status = CheckStackSize(value, where, config, settings);
    } else if (key == "simt_printf_fifo_size") {
      status = CheckFifoSize(key, value, 1 * kMiB, 64 * kMiB, where, config.simt_printf_fifo_size,
                             settings);
    } else if (key == "simd_printf_fifo_size_per_core") {
      status = CheckFifoSize(key, value, 1 * kKiB, 64 * kMiB, where,
                             config.simd_printf_fifo_size_per_core, settings);
    } else if (key == "max_opqueue_num") {
      status = CheckMaxOpQueueNum(value, where, config, settings);
    } else if (key == "dump") {
      status = CheckDump(value, where, config, settings);
    } else {
      settings[key] = CompactJson(value);  // unknown: accepted and kept
    }
    if (!status.ok()) return status;
  }
  config.settings.assign(settings.begin(), settings.end());
  return config;
}

}  // namespace

absl::StatusOr<std::string> ReadConfigFile(const char* config_path) {
  if (config_path == nullptr || config_path[0] == '\0') return std::string();
  const std::string path(config_path);

  // O_NONBLOCK so that a FIFO or device path cannot hang us before fstat rejects it.
  const int fd = ::open(config_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return FileError(path, absl::StrCat("does not exist (", std::strerror(err), ")"));
    }
    return FileError(path, absl::StrCat("cannot be opened for reading (", std::strerror(err), ")"));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return FileError(path, absl::StrCat("cannot be examined (", std::strerror(errno), ")"));
  }
  if (!S_ISREG(st.st_mode)) {
    return FileError(
        path, S_ISDIR(st.st_mode) ? "is a directory, not a regular file" : "is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    return FileError(path, absl::StrCat("is ", st.st_size, " bytes; the maximum is ",
                                        kMaxConfigFileBytes, " bytes (10 MiB)"));
  }

  std::string content;
  content.reserve(static_cast<size_t>(st.st_size));
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(path, absl::StrCat("cannot be read (", std::strerror(errno), ")"));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > kMaxConfigFileBytes) {
      return FileError(path, absl::StrCat("is larger than the maximum of ", kMaxConfigFileBytes,
                                          " bytes (10 MiB)"));
    }
  }
  return content;
}

absl::StatusOr<InitConfig> ParseInitConfig(std::string content) {
  return Parse(std::move(content), "content");
}

absl::StatusOr<InitConfig> ReadInitConfig(const char* config_path) {
  absl::StatusOr<std::string> content = ReadConfigFile(config_path);
  if (!content.ok()) return content.status();
  const std::string where = (config_path == nullptr || config_path[0] == '\0')
                                ? "content"
                                : absl::StrCat("file \"", config_path, "\"");
  return Parse(*std::move(content), where);
}

}  // namespace acl_client
