// aclInit config reader and validator.
//
// Rules implemented here, and where each comes from. "runtime" is the
// hicann/runtime repository (src/acl/...), "adump" is CANN's dump-config
// checker Adx::DumpConfigConverter (dump_config_converter.{h,cpp}, the code
// behind Adx::AdumpSetDumpConfig that aclInit calls through
// runtime src/acl/aclrt_impl/toolchain/dump.cpp), "docs" is the aclInit /
// aclmdlSetDump reference on hiascend.com (aclcppdevg_03_0022, "异常算子Dump配置",
// "溢出算子Dump配置", "算子Dump Watch模式配置") and seed 001 section 3.
//
// Reading the file (runtime acl_rt_impl_base.cpp GetStrFromConfigPath,
// common/json_parser.cpp GetConfigStrFromFile / IsValidFileName):
//   - nullptr or "" -> empty config, no file is read.
//   - path that does not resolve, is not a regular file (e.g. a directory),
//     is larger than 10 MiB or cannot be opened -> ACL_ERROR_INVALID_FILE.
//   - a file of 0 bytes -> empty config.
// Parsing (json_parser.cpp GetMaxNestedLayers / ParseJson):
//   - `{` nesting deeper than 10 or `[` nesting deeper than 10, counted
//     separately -> ACL_ERROR_PARSE_FILE. CANN counts every brace in the file,
//     even inside strings; we do not count braces inside JSON strings (a
//     deliberate, more lenient difference).
//   - content that is not JSON -> ACL_ERROR_PARSE_FILE. CANN parses with
//     nlohmann::json, which is strict RFC 8259. We parse with protobuf's JSON
//     parser, which also accepts unquoted keys, single-quoted strings and
//     trailing commas, so a small lexical pre-pass (the same pass that counts
//     nesting) rejects those, raw control characters in strings and any
//     stray character. Duplicate keys are a parse error here (protobuf's
//     Struct cannot hold them); nlohmann keeps the last one. Known difference.
//   - whitespace-only content (e.g. a file made by `echo > acl.json`) is NOT an
//     empty config: CANN hands the non-zero-length buffer to nlohmann::json,
//     which throws, so aclInit returns ACL_ERROR_PARSE_FILE. Same here.
//   - a leading UTF-8 byte order mark is skipped (nlohmann skips it too).
//   - top-level value that is not an object (`[1]`, `3`, `"x"`, `null`) is
//     accepted as a config without keys: CANN looks every key up with
//     nlohmann's find(), which finds nothing in a non-object, and its dump
//     checker does the same (adump Convert: no "dump" key -> nothing to do).
// Keys (an invalid value -> ACL_ERROR_INVALID_PARAM, as SPEC 4 / 4.1 say):
//   - err_msg_mode: the JSON string "0" or "1" only (runtime acl.cpp
//     HandleErrorManagerConfig compares the dumped JSON with "\"0\"" and
//     "\"1\""; the number 0 is rejected there too).
//   - defaultDevice: must be an object (CANN: .at() on a non-object throws ->
//     failure). defaultDevice.default_device: a JSON string holding "0" or a
//     positive decimal integer without leading zeros (json_parser.cpp
//     GetDefaultDeviceIdFromFile: get<std::string>() + IsZeroOrPositive...;
//     a JSON number throws there, i.e. fails). Must fit int32. Range against
//     the device count is the daemon's job.
//   - StackSize: must be an object (CANN ignores a non-object; we reject it as
//     meaningless). aicore_stack_size / simt_stack_size /
//     simt_divergence_stack_size: JSON numbers, non-negative integers
//     (json_parser.cpp GetStackSizeByType uses get<size_t>(); a string fails).
//     aicore: below 32 KiB -> 32 KiB, else rounded up to a multiple of 16 KiB
//     (docs, seed 001 §3.10); simt ones: rounded up to a multiple of 128
//     (§3.11). After rounding each must fit uint32 (rtDeviceSetLimit takes a
//     uint32); the product-specific maxima (128/192/7680 KiB) are not applied
//     to the simulated device.
//   - simt_printf_fifo_size / simd_printf_fifo_size_per_core: top-level keys
//     (json_parser.cpp GetPrintFifoSizeByType looks them up at the top level),
//     positive JSON integers (a string is rejected there); rounded up to a
//     multiple of 8 (docs §3.12/3.13), then 1 MiB..64 MiB and 1 KiB..64 MiB.
//   - max_opqueue_num: a positive integer given as a number or a string of
//     digits (hicann/ge acl_op_resource_manager.cpp HandleMaxOpQueueConfig
//     strips the quotes and uses strtol; we refuse trailing junk and fractions
//     that strtol would silently cut off).
//   - any other key, at any level: accepted and kept (settings) unchanged.
// The dump block (adump DumpConfigConverter::Convert, checked in this order):
//   1. no "dump" or "dump": {} -> nothing to check. "dump" not an object -> error.
//   2. types: dump_path, dump_mode, dump_op_switch, dump_level, dump_scene,
//      dump_data, dump_debug, dump_kernel_data, dump_step are strings;
//      dump_stats is an array of strings; dump_list is an array of objects
//      whose model_name is a string, layer / watcher_nodes are arrays of
//      strings, optype_blacklist / opname_blacklist are arrays of objects
//      {name: string, pos: [string]}, opname_range is an array of objects
//      {begin: string, end: string}.
//   3. values (non-empty, one of): dump_mode input|output|all; dump_data
//      tensor|stats; dump_op_switch on|off; dump_level op|kernel|all;
//      dump_debug on|off; dump_scene lite_exception|aic_err_brief_dump|
//      aic_err_norm_dump|aic_err_detail_dump|watcher; dump_kernel_data a comma
//      list of all|printf|tensor|assert|timestamp; dump_stats items
//      Max|Min|Avg|Nan|Negative Inf|Positive Inf|L2norm.
//   4. exception dump (dump_scene other than watcher): none of dump_mode,
//      dump_level, dump_data, dump_debug, dump_op_switch, dump_kernel_data,
//      dump_step, dump_stats, dump_list may be present (adump
//      CheckExceptionDumpScene; docs: "异常算子Dump配置，不能与模型Dump配置或单算子
//      Dump配置同时开启"). dump_path is optional. Nothing else is checked.
//   5. watcher (dump_scene "watcher"): dump_debug "on" and dump_op_switch "on"
//      are errors (docs: "不支持同时开启溢出算子Dump或开启单算子模型Dump，否则报错");
//      dump_mode, if given, must be "output"; dump_data, dump_kernel_data,
//      dump_step, dump_stats must be absent (adump CheckWatcherDumpScene).
//      adump also forbids dump_level there, but the docs' own watcher example
//      sets "dump_level": "op" and documents it, so we allow dump_level.
//   6. every other case (watcher, overflow, model/single-op dump, or a block
//      that only sets options): dump_path is required, non-empty and at most
//      512 characters (adump CheckDumpPath; docs: dump_path "必须配置").
//      adump also requires the path to exist as a writable directory (unless
//      it is "ipv4:path"); we do not touch the file system here, since the
//      simulated device writes no dump files.
//   7. overflow (dump_debug "on"): dump_op_switch "on" is an error and
//      dump_list must be absent (adump CheckDumpDebug; docs: "溢出算子Dump配置，
//      不能与模型Dump配置或单算子Dump配置同时开启，否则会返回报错"). Nothing else
//      is checked.
//   8. dump_step: "" or up to 100 "|"-separated items, each "N" or "N-M" with
//      N <= M, digits only.
//   9. dump_list items (when the list is not empty): with dump_op_switch off,
//      a present model_name must not be "" and a present layer must not be [];
//      with dump_scene watcher each item needs a non-empty watcher_nodes and no
//      model_name, otherwise watcher_nodes must be empty; each blacklist holds
//      at most 100 entries, needs dump_level "op", and its pos entries are
//      "input<N>" or "output<N>"; opname_range needs dump_level "op", a
//      non-empty model_name and non-empty begin and end.
//  10. dump_stats: not empty, and dump_data must be "stats" (default tensor).
// CANN reports dump errors as ACL_ERROR_INVALID_DUMP_CONFIG (100009); SPEC
// 4.1 asks for ACL_ERROR_INVALID_PARAM, which is what we return.
#include "client/init_config.h"

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acl_client {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();
constexpr size_t kMaxDumpPathLength = 512;
constexpr size_t kMaxDumpStepItems = 100;
constexpr size_t kMaxBlacklistSize = 100;

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

// Compact JSON of `value` with object keys sorted, so that what the admin CLI
// shows does not depend on protobuf's map order. Scalars are printed by
// protobuf, which also does the string escaping.
std::string CompactJson(const Value& value) {
  auto scalar = [](const Value& v) {
    std::string out;
    if (!google::protobuf::util::MessageToJsonString(v, &out).ok()) return std::string("null");
    return out;
  };
  switch (value.kind_case()) {
    case Value::kStructValue: {
      std::string out = "{";
      std::map<std::string, const Value*> fields;
      for (const auto& [key, field] : value.struct_value().fields()) fields.emplace(key, &field);
      for (const auto& [key, field] : fields) {
        if (out.size() > 1) out += ",";
        Value name;
        name.set_string_value(key);
        absl::StrAppend(&out, scalar(name), ":", CompactJson(*field));
      }
      return out + "}";
    }
    case Value::kListValue: {
      std::string out = "[";
      for (int i = 0; i < value.list_value().values_size(); ++i) {
        absl::StrAppend(&out, i ? "," : "", CompactJson(value.list_value().values(i)));
      }
      return out + "]";
    }
    default:
      return scalar(value);
  }
}

// A value as quoted in an error message: compact JSON, shortened.
std::string Shown(const Value& value) {
  std::string text = CompactJson(value);
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = absl::StrCat(text.substr(0, kMax), "...");
  return text;
}

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// ----------------------------------------------------------- lexical pass --

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

std::string CharName(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return absl::StrCat("'", std::string(1, c), "'");
  return absl::StrCat("byte 0x", absl::Hex(u, absl::kZeroPad2));
}

// Counts `{` and `[` nesting (outside strings) and rejects what RFC 8259 JSON
// does not allow but protobuf's lenient parser would accept. Structure and
// values are left to protobuf.
absl::Status ScanJson(absl::string_view text, const std::string& where) {
  int object_depth = 0;
  int array_depth = 0;
  char previous = 0;  // last structural token: '{' '[' ',' ':' or 'v' (a value ended)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '"') {
      size_t j = i + 1;
      for (; j < text.size(); ++j) {
        const unsigned char d = static_cast<unsigned char>(text[j]);
        if (d == '\\') {
          // protobuf accepts any escaped character; JSON allows only these.
          const char e = j + 1 < text.size() ? text[j + 1] : '\0';
          bool valid = e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't' || e == 'u';
          if (e == 'u') {
            for (size_t k = j + 2; k < j + 6; ++k) {
              valid = valid && k < text.size() &&
                      absl::ascii_isxdigit(static_cast<unsigned char>(text[k]));
            }
          }
          if (!valid) {
            return ParseError(
                where, absl::StrCat("invalid escape sequence in a string at ", Position(text, j),
                                    " (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"));
          }
          ++j;  // skip the escaped character (the 4 hex digits of \u are plain characters)
          continue;
        }
        if (d == '"') break;
        if (d < 0x20) {
          return ParseError(where, absl::StrCat("raw control character ", CharName(text[j]),
                                                " inside a string at ", Position(text, j),
                                                " (write it as an escape such as \\n)"));
        }
      }
      if (j >= text.size()) {
        return ParseError(where,
                          absl::StrCat("unterminated string starting at ", Position(text, i)));
      }
      i = j;
      previous = 'v';
      continue;
    }
    switch (c) {
      case '{':
        if (++object_depth > kMaxConfigObjectDepth) {
          return ParseError(
              where, absl::StrCat("'{' nesting exceeds the maximum of ", kMaxConfigObjectDepth,
                                  " levels at ", Position(text, i)));
        }
        previous = c;
        continue;
      case '[':
        if (++array_depth > kMaxConfigArrayDepth) {
          return ParseError(
              where, absl::StrCat("'[' nesting exceeds the maximum of ", kMaxConfigArrayDepth,
                                  " levels at ", Position(text, i)));
        }
        previous = c;
        continue;
      case '}':
      case ']':
        if (previous == ',') {
          return ParseError(where, absl::StrCat("trailing comma before ", CharName(c), " at ",
                                                Position(text, i)));
        }
        if (c == '}' && object_depth > 0) --object_depth;
        if (c == ']' && array_depth > 0) --array_depth;
        previous = 'v';
        continue;
      case ',':
      case ':':
        previous = c;
        continue;
      case '\'':
        return ParseError(where, absl::StrCat("single-quoted string at ", Position(text, i),
                                              " (JSON strings use double quotes)"));
      default:
        break;
    }
    if (c == '-' || absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      size_t j = i + 1;
      while (j < text.size() &&
             (absl::ascii_isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' ||
              text[j] == 'e' || text[j] == 'E' || text[j] == '+' || text[j] == '-')) {
        ++j;
      }
      i = j - 1;  // the number's exact syntax is checked by protobuf
      previous = 'v';
      continue;
    }
    if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
      size_t j = i + 1;
      while (j < text.size() && (absl::ascii_isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '$')) {
        ++j;
      }
      const absl::string_view word = text.substr(i, j - i);
      if (word != "true" && word != "false" && word != "null") {
        return ParseError(where, absl::StrCat("unquoted word \"", word, "\" at ", Position(text, i),
                                              " (keys and strings must be in double quotes)"));
      }
      i = j - 1;
      previous = 'v';
      continue;
    }
    return ParseError(where, absl::StrCat("unexpected ", CharName(c), " at ", Position(text, i)));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ value access --

// The value when `v` is a JSON number holding an integer >= 0 that a double
// represents exactly.
std::optional<uint64_t> AsNonNegativeInteger(const Value& v) {
  if (v.kind_case() != Value::kNumberValue) return std::nullopt;
  const double d = v.number_value();
  if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d > 9007199254740992.0)
    return std::nullopt;
  return static_cast<uint64_t>(d);
}

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

bool IsDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

const Value* Find(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

// Sorted view of an object's fields (protobuf's map has no order).
std::map<std::string, const Value*> Sorted(const Struct& s) {
  std::map<std::string, const Value*> out;
  for (const auto& [key, value] : s.fields()) out.emplace(key, &value);
  return out;
}

// ------------------------------------------------------------ simple keys --

absl::Status CheckErrMsgMode(const Value& v, const std::string& where, InitConfig& config,
                             SettingsMap& settings) {
  if (v.kind_case() == Value::kStringValue &&
      (v.string_value() == "0" || v.string_value() == "1")) {
    config.err_msg_mode = v.string_value() == "1" ? 1 : 0;
    settings["err_msg_mode"] = v.string_value();
    return absl::OkStatus();
  }
  return InvalidParam(where,
                      absl::StrCat("err_msg_mode must be the string \"0\" (thread-level) or \"1\" "
                                   "(process-level), got ",
                                   Shown(v)));
}

absl::Status CheckDefaultDevice(const Value& v, const std::string& where, InitConfig& config,
                                SettingsMap& settings) {
  if (v.kind_case() != Value::kStructValue) {
    return InvalidParam(where, absl::StrCat("defaultDevice must be a JSON object such as "
                                            "{\"default_device\": \"0\"}, got ",
                                            Shown(v)));
  }
  for (const auto& [key, value] : Sorted(v.struct_value())) {
    const std::string dotted = absl::StrCat("defaultDevice.", key);
    if (key != "default_device") {
      settings[dotted] = CompactJson(*value);
      continue;
    }
    const std::string hint =
        "defaultDevice.default_device must be a string holding 0 or a positive decimal integer "
        "without "
        "leading zeros, such as \"0\"";
    if (value->kind_case() != Value::kStringValue) {
      return InvalidParam(where,
                          absl::StrCat(hint, "; got ", Shown(*value),
                                       value->kind_case() == Value::kNumberValue
                                           ? " (CANN reads this key as a string: put it in quotes)"
                                           : ""));
    }
    const std::string& text = value->string_value();
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

absl::Status CheckStackSize(const Value& v, const std::string& where, InitConfig& config,
                            SettingsMap& settings) {
  if (v.kind_case() != Value::kStructValue) {
    return InvalidParam(where, absl::StrCat("StackSize must be a JSON object such as "
                                            "{\"aicore_stack_size\": 32768}, got ",
                                            Shown(v)));
  }
  for (const auto& [key, value] : Sorted(v.struct_value())) {
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
      settings[dotted] = CompactJson(*value);
      continue;
    }
    const std::optional<uint64_t> raw = AsNonNegativeInteger(*value);
    if (!raw) {
      return InvalidParam(where, absl::StrCat(dotted,
                                              " must be a non-negative integer number of bytes "
                                              "(a JSON number, not a string), got ",
                                              Shown(*value)));
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

absl::Status CheckFifoSize(const std::string& key, const Value& v, uint64_t min, uint64_t max,
                           const std::string& where, uint64_t& target, SettingsMap& settings) {
  const std::string allowed =
      absl::StrCat("a positive integer number of bytes (a JSON number) from ", min, " to ", max,
                   ", rounded up to a multiple of 8");
  const std::optional<uint64_t> raw = AsNonNegativeInteger(v);
  if (!raw || *raw == 0)
    return InvalidParam(where, absl::StrCat(key, " must be ", allowed, "; got ", Shown(v)));
  const uint64_t size = RoundUp(*raw, 8);
  if (size < min || size > max) {
    return InvalidParam(where,
                        absl::StrCat(key, " ", *raw, " is out of range: it must be ", allowed));
  }
  target = size;
  settings[key] = absl::StrCat(size);
  return absl::OkStatus();
}

absl::Status CheckMaxOpQueueNum(const Value& v, const std::string& where, InitConfig& config,
                                SettingsMap& settings) {
  std::optional<uint64_t> count;
  if (v.kind_case() == Value::kNumberValue) {
    count = AsNonNegativeInteger(v);
  } else if (v.kind_case() == Value::kStringValue && IsDigits(v.string_value())) {
    uint64_t parsed = 0;
    if (absl::SimpleAtoi(v.string_value(), &parsed) &&
        parsed <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      count = parsed;
    }
  }
  if (!count || *count == 0) {
    return InvalidParam(
        where, absl::StrCat("max_opqueue_num must be a positive integer (a number or a string "
                            "of digits such as \"20000\"), got ",
                            Shown(v)));
  }
  config.max_opqueue_num = *count;
  settings["max_opqueue_num"] = absl::StrCat(*count);
  return absl::OkStatus();
}

// -------------------------------------------------------------- dump block --

class DumpChecker {
 public:
  DumpChecker(const Struct& dump, const std::string& where) : dump_(dump), where_(where) {}

  absl::Status Check(InitConfig& config) {
    if (dump_.fields().empty()) return absl::OkStatus();
    if (auto s = CheckTypes(); !s.ok()) return s;
    if (auto s = CheckValues(); !s.ok()) return s;
    if (const Value* path = Find(dump_, "dump_path")) config.dump_path = path->string_value();

    const std::string scene = Str("dump_scene", "");
    if (!scene.empty() && scene != "watcher") {
      // Exception dump: a scene of its own, combinable with nothing else.
      for (const char* key :
           {"dump_list", "dump_op_switch", "dump_debug", "dump_mode", "dump_level", "dump_data",
            "dump_kernel_data", "dump_step", "dump_stats"}) {
        if (Has(key)) {
          return Error(
              absl::StrCat("dump.", key, " cannot be set when dump.dump_scene is ", Quoted(scene),
                           ": exception dump cannot be combined with model, single-op or overflow "
                           "dump or with data options (only dump_path may accompany it)"));
        }
      }
      config.dump_kind = DumpKind::kException;
      return absl::OkStatus();
    }
    if (scene == "watcher") {
      if (Str("dump_debug", "off") == "on") {
        return Error(
            "dump.dump_debug cannot be \"on\" when dump.dump_scene is \"watcher\": "
            "watcher mode cannot be combined with overflow dump");
      }
      if (Str("dump_op_switch", "off") == "on") {
        return Error(
            "dump.dump_op_switch cannot be \"on\" when dump.dump_scene is \"watcher\": "
            "watcher mode cannot be combined with single-op dump");
      }
      if (const std::string mode = Str("dump_mode", "output"); mode != "output") {
        return Error(
            absl::StrCat("dump.dump_mode ", Quoted(mode),
                         " is not allowed when dump.dump_scene is \"watcher\": only \"output\""));
      }
      for (const char* key : {"dump_data", "dump_kernel_data", "dump_step", "dump_stats"}) {
        if (Has(key)) {
          return Error(
              absl::StrCat("dump.", key, " cannot be set when dump.dump_scene is \"watcher\""));
        }
      }
    }

    if (auto s = CheckDumpPath(); !s.ok()) return s;

    if (Str("dump_debug", "off") == "on") {
      if (Str("dump_op_switch", "off") == "on") {
        return Error(
            "dump.dump_op_switch cannot be \"on\" when dump.dump_debug is \"on\": "
            "overflow dump cannot be combined with single-op dump");
      }
      if (Has("dump_list")) {
        return Error(
            "dump.dump_list cannot be set when dump.dump_debug is \"on\": "
            "overflow dump cannot be combined with model dump");
      }
      config.dump_kind = DumpKind::kOverflow;
      return absl::OkStatus();
    }

    if (auto s = CheckDumpStep(); !s.ok()) return s;
    if (auto s = CheckDumpList(scene); !s.ok()) return s;
    if (auto s = CheckDumpStats(); !s.ok()) return s;

    if (scene == "watcher") {
      config.dump_kind = DumpKind::kWatcher;
    } else if (ListSize("dump_list") > 0 || Str("dump_op_switch", "off") == "on") {
      config.dump_kind = DumpKind::kData;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view detail) const { return InvalidParam(where_, detail); }

  bool Has(const std::string& key) const { return Find(dump_, key) != nullptr; }

  // A string field (types are checked first), or `fallback` when absent.
  std::string Str(const std::string& key, const std::string& fallback) const {
    const Value* v = Find(dump_, key);
    return v == nullptr ? fallback : v->string_value();
  }

  int ListSize(const std::string& key) const {
    const Value* v = Find(dump_, key);
    return v == nullptr ? 0 : v->list_value().values_size();
  }

  absl::Status RequireString(const Struct& object, const std::string& key,
                             const std::string& path) const {
    const Value* v = Find(object, key);
    if (v != nullptr && v->kind_case() != Value::kStringValue) {
      return Error(absl::StrCat(path, " must be a string, got ", Shown(*v)));
    }
    return absl::OkStatus();
  }

  absl::Status RequireArrayOf(const Struct& object, const std::string& key, const std::string& path,
                              Value::KindCase item_kind) const {
    const Value* v = Find(object, key);
    if (v == nullptr) return absl::OkStatus();
    const char* item_name = item_kind == Value::kStringValue ? "strings" : "objects";
    if (v->kind_case() != Value::kListValue) {
      return Error(absl::StrCat(path, " must be an array of ", item_name, ", got ", Shown(*v)));
    }
    const ListValue& list = v->list_value();
    for (int i = 0; i < list.values_size(); ++i) {
      if (list.values(i).kind_case() != item_kind) {
        const char* expected = item_kind == Value::kStringValue ? "a string" : "an object";
        return Error(
            absl::StrCat(path, "[", i, "] must be ", expected, ", got ", Shown(list.values(i))));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckBlacklistTypes(const Struct& item, const std::string& key,
                                   const std::string& base) const {
    const std::string path = absl::StrCat(base, ".", key);
    if (auto s = RequireArrayOf(item, key, path, Value::kStructValue); !s.ok()) return s;
    const Value* v = Find(item, key);
    if (v == nullptr) return absl::OkStatus();
    for (int i = 0; i < v->list_value().values_size(); ++i) {
      const Struct& entry = v->list_value().values(i).struct_value();
      const std::string entry_path = absl::StrCat(path, "[", i, "]");
      if (auto s = RequireString(entry, "name", entry_path + ".name"); !s.ok()) return s;
      if (auto s = RequireArrayOf(entry, "pos", entry_path + ".pos", Value::kStringValue); !s.ok())
        return s;
    }
    return absl::OkStatus();
  }

  absl::Status CheckTypes() const {
    for (const char* key : {"dump_path", "dump_mode", "dump_op_switch", "dump_level", "dump_scene",
                            "dump_data", "dump_debug", "dump_kernel_data", "dump_step"}) {
      if (auto s = RequireString(dump_, key, absl::StrCat("dump.", key)); !s.ok()) return s;
    }
    if (auto s = RequireArrayOf(dump_, "dump_stats", "dump.dump_stats", Value::kStringValue);
        !s.ok())
      return s;
    if (auto s = RequireArrayOf(dump_, "dump_list", "dump.dump_list", Value::kStructValue); !s.ok())
      return s;
    for (int i = 0; i < ListSize("dump_list"); ++i) {
      const Struct& item = Find(dump_, "dump_list")->list_value().values(i).struct_value();
      const std::string base = absl::StrCat("dump.dump_list[", i, "]");
      if (auto s = RequireString(item, "model_name", base + ".model_name"); !s.ok()) return s;
      if (auto s = RequireArrayOf(item, "layer", base + ".layer", Value::kStringValue); !s.ok())
        return s;
      if (auto s =
              RequireArrayOf(item, "watcher_nodes", base + ".watcher_nodes", Value::kStringValue);
          !s.ok()) {
        return s;
      }
      if (auto s = CheckBlacklistTypes(item, "optype_blacklist", base); !s.ok()) return s;
      if (auto s = CheckBlacklistTypes(item, "opname_blacklist", base); !s.ok()) return s;
      const std::string range_path = base + ".opname_range";
      if (auto s = RequireArrayOf(item, "opname_range", range_path, Value::kStructValue); !s.ok())
        return s;
      if (const Value* ranges = Find(item, "opname_range")) {
        for (int j = 0; j < ranges->list_value().values_size(); ++j) {
          const Struct& range = ranges->list_value().values(j).struct_value();
          const std::string p = absl::StrCat(range_path, "[", j, "]");
          if (auto s = RequireString(range, "begin", p + ".begin"); !s.ok()) return s;
          if (auto s = RequireString(range, "end", p + ".end"); !s.ok()) return s;
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckOneOf(const std::string& path, const std::string& value,
                          const std::vector<std::string>& allowed) const {
    if (value.empty()) {
      return Error(
          absl::StrCat(path, " must not be empty; allowed: ", absl::StrJoin(allowed, "|")));
    }
    for (const std::string& a : allowed) {
      if (value == a) return absl::OkStatus();
    }
    return Error(absl::StrCat(path, " ", Quoted(value),
                              " is not allowed; allowed: ", absl::StrJoin(allowed, "|")));
  }

  absl::Status CheckValues() const {
    const std::vector<std::pair<const char*, std::vector<std::string>>> enums = {
        {"dump_mode", {"input", "output", "all"}},
        {"dump_data", {"tensor", "stats"}},
        {"dump_op_switch", {"on", "off"}},
        {"dump_level", {"op", "kernel", "all"}},
        {"dump_debug", {"on", "off"}},
        {"dump_scene",
         {"lite_exception", "aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump",
          "watcher"}},
    };
    for (const auto& [key, allowed] : enums) {
      if (const Value* v = Find(dump_, key)) {
        if (auto s = CheckOneOf(absl::StrCat("dump.", key), v->string_value(), allowed); !s.ok())
          return s;
      }
    }
    if (const Value* v = Find(dump_, "dump_kernel_data")) {
      const std::vector<std::string> allowed = {"all", "printf", "tensor", "assert", "timestamp"};
      for (absl::string_view part : absl::StrSplit(v->string_value(), ',')) {
        if (auto s = CheckOneOf("dump.dump_kernel_data item", std::string(part), allowed); !s.ok())
          return s;
      }
    }
    if (const Value* v = Find(dump_, "dump_stats")) {
      const std::vector<std::string> allowed = {"Max",          "Min",          "Avg",   "Nan",
                                                "Negative Inf", "Positive Inf", "L2norm"};
      for (int i = 0; i < v->list_value().values_size(); ++i) {
        if (auto s = CheckOneOf(absl::StrCat("dump.dump_stats[", i, "]"),
                                v->list_value().values(i).string_value(), allowed);
            !s.ok()) {
          return s;
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpPath() const {
    const Value* v = Find(dump_, "dump_path");
    const char* why =
        " (model, single-op, overflow and watcher dump all need a directory for the dump files; "
        "only an "
        "exception dump_scene may omit it)";
    if (v == nullptr) return Error(absl::StrCat("dump.dump_path is required", why));
    if (v->string_value().empty())
      return Error(absl::StrCat("dump.dump_path must not be empty", why));
    if (v->string_value().size() > kMaxDumpPathLength) {
      return Error(absl::StrCat("dump.dump_path is ", v->string_value().size(),
                                " characters long; at most ", kMaxDumpPathLength, " are allowed"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpStep() const {
    const std::string step = Str("dump_step", "");
    if (step.empty()) return absl::OkStatus();
    const std::string format =
        "expected \"N\" or \"N-M\" items separated by '|', e.g. \"0|3-5|10\"";
    std::vector<std::string> items = absl::StrSplit(step, '|');
    if (items.size() > kMaxDumpStepItems) {
      return Error(absl::StrCat("dump.dump_step ", Quoted(step), " has ", items.size(),
                                " items; at most ", kMaxDumpStepItems, " are allowed"));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      std::vector<std::string> ends = absl::StrSplit(items[i], '-');
      bool ok = ends.size() <= 2;
      for (const std::string& e : ends) ok = ok && IsDigits(e);
      uint64_t first = 0, last = 0;
      if (ok) ok = absl::SimpleAtoi(ends.front(), &first) && absl::SimpleAtoi(ends.back(), &last);
      if (!ok) {
        return Error(
            absl::StrCat("dump.dump_step[", i, "] ", Quoted(items[i]), " is malformed; ", format));
      }
      if (first > last) {
        return Error(absl::StrCat("dump.dump_step[", i, "] ", Quoted(items[i]),
                                  " is an empty range: its start is after its end"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckBlacklist(const Struct& item, const std::string& key, const std::string& base,
                              const std::string& level) const {
    const Value* v = Find(item, key);
    if (v == nullptr || v->list_value().values_size() == 0) return absl::OkStatus();
    const std::string path = absl::StrCat(base, ".", key);
    const ListValue& list = v->list_value();
    if (static_cast<size_t>(list.values_size()) > kMaxBlacklistSize) {
      return Error(absl::StrCat(path, " has ", list.values_size(), " entries; at most ",
                                kMaxBlacklistSize, " are allowed"));
    }
    if (level != "op") {
      return Error(absl::StrCat(path, " requires dump.dump_level \"op\", but dump_level is ",
                                Quoted(level)));
    }
    for (int i = 0; i < list.values_size(); ++i) {
      const Value* pos = Find(list.values(i).struct_value(), "pos");
      if (pos == nullptr) continue;
      for (int j = 0; j < pos->list_value().values_size(); ++j) {
        const std::string& p = pos->list_value().values(j).string_value();
        if (p.empty()) continue;
        const bool ok =
            (absl::StartsWith(p, "input") && IsDigits(absl::string_view(p).substr(5))) ||
            (absl::StartsWith(p, "output") && IsDigits(absl::string_view(p).substr(6)));
        if (!ok) {
          return Error(absl::StrCat(
              path, "[", i, "].pos[", j, "] ", Quoted(p),
              " is malformed; expected \"input<N>\" or \"output<N>\", e.g. \"input0\""));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpList(const std::string& scene) const {
    if (ListSize("dump_list") == 0) return absl::OkStatus();
    const std::string level = Str("dump_level", "all");
    const bool switch_off = Str("dump_op_switch", "off") == "off";
    const ListValue& list = Find(dump_, "dump_list")->list_value();
    for (int i = 0; i < list.values_size(); ++i) {
      const Struct& item = list.values(i).struct_value();
      const std::string base = absl::StrCat("dump.dump_list[", i, "]");
      const Value* model_name = Find(item, "model_name");
      const Value* layer = Find(item, "layer");
      const Value* watcher_nodes = Find(item, "watcher_nodes");
      const bool has_watcher_nodes =
          watcher_nodes != nullptr && watcher_nodes->list_value().values_size() > 0;
      if (switch_off && model_name != nullptr && model_name->string_value().empty()) {
        return Error(absl::StrCat(base, ".model_name must not be empty"));
      }
      if (switch_off && layer != nullptr && layer->list_value().values_size() == 0) {
        return Error(
            absl::StrCat(base, ".layer must not be an empty array (omit it to dump every layer)"));
      }
      if (scene == "watcher") {
        if (!has_watcher_nodes) {
          return Error(absl::StrCat(base,
                                    ".watcher_nodes must list at least one operator when "
                                    "dump.dump_scene is \"watcher\""));
        }
        if (model_name != nullptr && !model_name->string_value().empty()) {
          return Error(
              absl::StrCat(base, ".model_name cannot be set when dump.dump_scene is \"watcher\""));
        }
      } else if (has_watcher_nodes) {
        return Error(absl::StrCat(
            base, ".watcher_nodes is only allowed when dump.dump_scene is \"watcher\""));
      }
      if (auto s = CheckBlacklist(item, "optype_blacklist", base, level); !s.ok()) return s;
      if (auto s = CheckBlacklist(item, "opname_blacklist", base, level); !s.ok()) return s;
      const Value* ranges = Find(item, "opname_range");
      if (ranges != nullptr && ranges->list_value().values_size() > 0) {
        const std::string path = base + ".opname_range";
        if (level != "op") {
          return Error(absl::StrCat(path, " requires dump.dump_level \"op\", but dump_level is ",
                                    Quoted(level)));
        }
        if (model_name == nullptr || model_name->string_value().empty()) {
          return Error(absl::StrCat(path, " requires a non-empty ", base, ".model_name"));
        }
        for (int j = 0; j < ranges->list_value().values_size(); ++j) {
          const Struct& range = ranges->list_value().values(j).struct_value();
          const Value* begin = Find(range, "begin");
          const Value* end = Find(range, "end");
          if (begin == nullptr || end == nullptr || begin->string_value().empty() ||
              end->string_value().empty()) {
            return Error(absl::StrCat(
                path, "[", j, "] needs both a non-empty \"begin\" and a non-empty \"end\""));
          }
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpStats() const {
    const Value* v = Find(dump_, "dump_stats");
    if (v == nullptr) return absl::OkStatus();
    if (v->list_value().values_size() == 0)
      return Error("dump.dump_stats must not be an empty array");
    if (Str("dump_data", "tensor") != "stats") {
      return Error(
          "dump.dump_stats requires dump.dump_data \"stats\" (dump_data is \"tensor\" by default)");
    }
    return absl::OkStatus();
  }

  const Struct& dump_;
  const std::string& where_;
};

absl::Status CheckDump(const Value& v, const std::string& where, InitConfig& config,
                       SettingsMap& settings) {
  if (v.kind_case() != Value::kStructValue) {
    return InvalidParam(where, absl::StrCat("dump must be a JSON object, got ", Shown(v)));
  }
  for (const auto& [key, value] : Sorted(v.struct_value())) {
    settings[absl::StrCat("dump.", key)] =
        value->kind_case() == Value::kStringValue ? value->string_value() : CompactJson(*value);
  }
  return DumpChecker(v.struct_value(), where).Check(config);
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
  if (auto s = ScanJson(text, where); !s.ok()) return s;

  Value root;
  const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(text), &root);
  if (!parsed.ok()) {
    // protobuf appends the offending line and a caret on further lines; keep the first.
    std::string message(parsed.message());
    message = message.substr(0, message.find('\n'));
    // Struct holds each key once; protobuf reports a repeated one this way.
    if (const size_t at = message.find("Repeated map key: "); at != std::string::npos) {
      std::string key = message.substr(at + 18);
      key = key.substr(0, key.find(" is already set"));
      message = absl::StrCat("duplicate key ", key, " (a key may appear only once per object)");
    }
    return ParseError(where, message);
  }
  if (root.kind_case() != Value::kStructValue) return config;  // no keys, as in CANN

  SettingsMap settings;
  for (const auto& [key, value] : Sorted(root.struct_value())) {
    absl::Status status;
    if (key == "err_msg_mode") {
      status = CheckErrMsgMode(*value, where, config, settings);
    } else if (key == "defaultDevice") {
      status = CheckDefaultDevice(*value, where, config, settings);
    } else if (key == "StackSize") {
      status = CheckStackSize(*value, where, config, settings);
    } else if (key == "simt_printf_fifo_size") {
      status = CheckFifoSize(key, *value, 1 * kMiB, 64 * kMiB, where, config.simt_printf_fifo_size,
                             settings);
    } else if (key == "simd_printf_fifo_size_per_core") {
      status = CheckFifoSize(key, *value, 1 * kKiB, 64 * kMiB, where,
                             config.simd_printf_fifo_size_per_core, settings);
    } else if (key == "max_opqueue_num") {
      status = CheckMaxOpQueueNum(*value, where, config, settings);
    } else if (key == "dump") {
      status = CheckDump(*value, where, config, settings);
    } else {
      settings[key] = CompactJson(*value);  // unknown: accepted and kept
    }
    if (!status.ok()) return status;
  }
  config.settings.assign(settings.begin(), settings.end());
  return config;
}

}  // namespace

const char* DumpKindName(DumpKind kind) {
  switch (kind) {
    case DumpKind::kNone:
      return "none";
    case DumpKind::kData:
      return "data";
    case DumpKind::kException:
      return "exception";
    case DumpKind::kOverflow:
      return "overflow";
    case DumpKind::kWatcher:
      return "watcher";
  }
  return "unknown";
}

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
