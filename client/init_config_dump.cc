// Rules of the aclInit `dump` block (SPEC 4.1), checked in the order CANN's
// own dump-config checker applies them, so that a block with several
// mistakes is reported for the same one:
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
//      dump_step, dump_stats, dump_list may be present: CANN documents that an
//      exception dump combines with no model, single-op or overflow dump.
//      dump_path is optional. Nothing else is checked.
//   5. watcher (dump_scene "watcher"): dump_debug "on" and dump_op_switch "on"
//      are errors (documented: watcher combines with neither overflow nor
//      single-op dump); dump_mode, if given, must be "output"; dump_data,
//      dump_kernel_data, dump_step, dump_stats must be absent. CANN's checker
//      also forbids dump_level there, but CANN's own documented watcher
//      example sets "dump_level": "op", so we allow dump_level.
//   6. every other case (watcher, overflow, model/single-op dump, or a block
//      that only sets options): dump_path is required, non-empty and at most
//      512 characters (documented as mandatory there). CANN also requires the
//      path to exist as a writable directory (unless it is "ipv4:path"); we do
//      not touch the file system here, since the simulated device writes no
//      dump files.
//   7. overflow (dump_debug "on"): dump_op_switch "on" is an error and
//      dump_list must be absent (documented: overflow dump combines with no
//      model or single-op dump). Nothing else is checked.
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
// 4.1 asks for ACL_ERROR_INVALID_PARAM, which init_config.cc returns.
#include "client/init_config_dump.h"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "client/init_config_json.h"

namespace acl_client {
namespace {

using config_json::Find;
using config_json::IsDigits;
using config_json::ItemsOf;
using config_json::Quoted;
using config_json::Shown;
using config_json::StringOf;
using nlohmann::json;

constexpr size_t kMaxDumpPathLength = 512;
constexpr size_t kMaxDumpStepItems = 100;
constexpr size_t kMaxBlacklistSize = 100;

enum class ItemType { kString, kObject };

class DumpChecker {
 public:
  explicit DumpChecker(const json& dump) : dump_(dump) {}

  absl::StatusOr<DumpConfig> Check() const {
    DumpConfig config;
    if (dump_.empty()) return config;
    if (auto s = CheckTypes(); !s.ok()) return s;
    if (auto s = CheckValues(); !s.ok()) return s;
    config.path = Str("dump_path", "");

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
      config.kind = DumpKind::kException;
      return config;
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
      config.kind = DumpKind::kOverflow;
      return config;
    }

    if (auto s = CheckDumpStep(); !s.ok()) return s;
    if (auto s = CheckDumpList(scene); !s.ok()) return s;
    if (auto s = CheckDumpStats(); !s.ok()) return s;

    if (scene == "watcher") {
      config.kind = DumpKind::kWatcher;
    } else if (!Items("dump_list").empty() || Str("dump_op_switch", "off") == "on") {
      config.kind = DumpKind::kData;
    }
    return config;
  }

 private:
  static absl::Status Error(absl::string_view detail) { return absl::InvalidArgumentError(detail); }

  bool Has(const std::string& key) const { return Find(dump_, key) != nullptr; }

  // A string member of the block (types are checked first), or `fallback`
  // when absent.
  std::string Str(const std::string& key, const std::string& fallback) const {
    const json* v = Find(dump_, key);
    return v == nullptr ? fallback : StringOf(*v);
  }

  // The items of an array member of the block; none when absent.
  const json::array_t& Items(const std::string& key) const { return ItemsOf(Find(dump_, key)); }

  static absl::Status RequireString(const json& object, const std::string& key,
                                    const std::string& path) {
    const json* v = Find(object, key);
    if (v != nullptr && !v->is_string()) {
      return Error(absl::StrCat(path, " must be a string, got ", Shown(*v)));
    }
    return absl::OkStatus();
  }

  static absl::Status RequireArrayOf(const json& object, const std::string& key,
                                     const std::string& path, ItemType item_type) {
    const json* v = Find(object, key);
    if (v == nullptr) return absl::OkStatus();
    const bool strings = item_type == ItemType::kString;
    if (!v->is_array()) {
      return Error(absl::StrCat(path, " must be an array of ", strings ? "strings" : "objects",
                                ", got ", Shown(*v)));
    }
    const json::array_t& items = ItemsOf(v);
    for (size_t i = 0; i < items.size(); ++i) {
      if (strings ? !items[i].is_string() : !items[i].is_object()) {
        return Error(absl::StrCat(path, "[", i, "] must be ", strings ? "a string" : "an object",
                                  ", got ", Shown(items[i])));
      }
    }
    return absl::OkStatus();
  }

  static absl::Status CheckBlacklistTypes(const json& item, const std::string& key,
                                          const std::string& base) {
    const std::string path = absl::StrCat(base, ".", key);
    if (auto s = RequireArrayOf(item, key, path, ItemType::kObject); !s.ok()) return s;
    const json::array_t& entries = ItemsOf(Find(item, key));
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string entry_path = absl::StrCat(path, "[", i, "]");
      if (auto s = RequireString(entries[i], "name", entry_path + ".name"); !s.ok()) return s;
      if (auto s = RequireArrayOf(entries[i], "pos", entry_path + ".pos", ItemType::kString);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckTypes() const {
    for (const char* key : {"dump_path", "dump_mode", "dump_op_switch", "dump_level", "dump_scene",
                            "dump_data", "dump_debug", "dump_kernel_data", "dump_step"}) {
      if (auto s = RequireString(dump_, key, absl::StrCat("dump.", key)); !s.ok()) return s;
    }
    if (auto s = RequireArrayOf(dump_, "dump_stats", "dump.dump_stats", ItemType::kString);
        !s.ok()) {
      return s;
    }
    if (auto s = RequireArrayOf(dump_, "dump_list", "dump.dump_list", ItemType::kObject); !s.ok())
      return s;
    const json::array_t& list = Items("dump_list");
    for (size_t i = 0; i < list.size(); ++i) {
      const json& item = list[i];
      const std::string base = absl::StrCat("dump.dump_list[", i, "]");
      if (auto s = RequireString(item, "model_name", base + ".model_name"); !s.ok()) return s;
      if (auto s = RequireArrayOf(item, "layer", base + ".layer", ItemType::kString); !s.ok())
        return s;
      if (auto s =
              RequireArrayOf(item, "watcher_nodes", base + ".watcher_nodes", ItemType::kString);
          !s.ok()) {
        return s;
      }
      if (auto s = CheckBlacklistTypes(item, "optype_blacklist", base); !s.ok()) return s;
      if (auto s = CheckBlacklistTypes(item, "opname_blacklist", base); !s.ok()) return s;
      const std::string range_path = base + ".opname_range";
      if (auto s = RequireArrayOf(item, "opname_range", range_path, ItemType::kObject); !s.ok())
        return s;
      const json::array_t& ranges = ItemsOf(Find(item, "opname_range"));
      for (size_t j = 0; j < ranges.size(); ++j) {
        const std::string p = absl::StrCat(range_path, "[", j, "]");
        if (auto s = RequireString(ranges[j], "begin", p + ".begin"); !s.ok()) return s;
        if (auto s = RequireString(ranges[j], "end", p + ".end"); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  static absl::Status CheckOneOf(const std::string& path, const std::string& value,
                                 const std::vector<std::string>& allowed) {
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
      if (Has(key)) {
        if (auto s = CheckOneOf(absl::StrCat("dump.", key), Str(key, ""), allowed); !s.ok())
          return s;
      }
    }
    if (Has("dump_kernel_data")) {
      const std::vector<std::string> allowed = {"all", "printf", "tensor", "assert", "timestamp"};
      for (absl::string_view part : absl::StrSplit(Str("dump_kernel_data", ""), ',')) {
        if (auto s = CheckOneOf("dump.dump_kernel_data item", std::string(part), allowed); !s.ok())
          return s;
      }
    }
    const std::vector<std::string> allowed_stats = {"Max",          "Min",          "Avg",   "Nan",
                                                    "Negative Inf", "Positive Inf", "L2norm"};
    const json::array_t& stats = Items("dump_stats");
    for (size_t i = 0; i < stats.size(); ++i) {
      if (auto s = CheckOneOf(absl::StrCat("dump.dump_stats[", i, "]"), StringOf(stats[i]),
                              allowed_stats);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpPath() const {
    const json* v = Find(dump_, "dump_path");
    const char* why =
        " (model, single-op, overflow and watcher dump all need a directory for the dump files; "
        "only an exception dump_scene may omit it)";
    if (v == nullptr) return Error(absl::StrCat("dump.dump_path is required", why));
    const std::string& path = StringOf(*v);
    if (path.empty()) return Error(absl::StrCat("dump.dump_path must not be empty", why));
    if (path.size() > kMaxDumpPathLength) {
      return Error(absl::StrCat("dump.dump_path is ", path.size(), " characters long; at most ",
                                kMaxDumpPathLength, " are allowed"));
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

  static absl::Status CheckBlacklist(const json& item, const std::string& key,
                                     const std::string& base, const std::string& level) {
    const json::array_t& entries = ItemsOf(Find(item, key));
    if (entries.empty()) return absl::OkStatus();
    const std::string path = absl::StrCat(base, ".", key);
    if (entries.size() > kMaxBlacklistSize) {
      return Error(absl::StrCat(path, " has ", entries.size(), " entries; at most ",
                                kMaxBlacklistSize, " are allowed"));
    }
    if (level != "op") {
      return Error(absl::StrCat(path, " requires dump.dump_level \"op\", but dump_level is ",
                                Quoted(level)));
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      const json::array_t& positions = ItemsOf(Find(entries[i], "pos"));
      for (size_t j = 0; j < positions.size(); ++j) {
        const std::string& p = StringOf(positions[j]);
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
    const json::array_t& list = Items("dump_list");
    if (list.empty()) return absl::OkStatus();
    const std::string level = Str("dump_level", "all");
    const bool switch_off = Str("dump_op_switch", "off") == "off";
    for (size_t i = 0; i < list.size(); ++i) {
      const json& item = list[i];
      const std::string base = absl::StrCat("dump.dump_list[", i, "]");
      const json* model_name = Find(item, "model_name");
      const json* layer = Find(item, "layer");
      const json* watcher_nodes = Find(item, "watcher_nodes");
      const bool has_watcher_nodes = !ItemsOf(watcher_nodes).empty();
      if (switch_off && model_name != nullptr && StringOf(*model_name).empty()) {
        return Error(absl::StrCat(base, ".model_name must not be empty"));
      }
      if (switch_off && layer != nullptr && ItemsOf(layer).empty()) {
        return Error(
            absl::StrCat(base, ".layer must not be an empty array (omit it to dump every layer)"));
      }
      if (scene == "watcher") {
        if (!has_watcher_nodes) {
          return Error(absl::StrCat(base,
                                    ".watcher_nodes must list at least one operator when "
                                    "dump.dump_scene is \"watcher\""));
        }
        if (model_name != nullptr && !StringOf(*model_name).empty()) {
          return Error(
              absl::StrCat(base, ".model_name cannot be set when dump.dump_scene is \"watcher\""));
        }
      } else if (has_watcher_nodes) {
        return Error(absl::StrCat(
            base, ".watcher_nodes is only allowed when dump.dump_scene is \"watcher\""));
      }
      if (auto s = CheckBlacklist(item, "optype_blacklist", base, level); !s.ok()) return s;
      if (auto s = CheckBlacklist(item, "opname_blacklist", base, level); !s.ok()) return s;
      const json::array_t& ranges = ItemsOf(Find(item, "opname_range"));
      if (ranges.empty()) continue;
      const std::string path = base + ".opname_range";
      if (level != "op") {
        return Error(absl::StrCat(path, " requires dump.dump_level \"op\", but dump_level is ",
                                  Quoted(level)));
      }
      if (model_name == nullptr || StringOf(*model_name).empty()) {
        return Error(absl::StrCat(path, " requires a non-empty ", base, ".model_name"));
      }
      for (size_t j = 0; j < ranges.size(); ++j) {
        const json* begin = Find(ranges[j], "begin");
        const json* end = Find(ranges[j], "end");
        if (begin == nullptr || end == nullptr || StringOf(*begin).empty() ||
            StringOf(*end).empty()) {
          return Error(absl::StrCat(path, "[", j,
                                    "] needs both a non-empty \"begin\" and a non-empty \"end\""));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckDumpStats() const {
    if (!Has("dump_stats")) return absl::OkStatus();
    if (Items("dump_stats").empty()) return Error("dump.dump_stats must not be an empty array");
    if (Str("dump_data", "tensor") != "stats") {
      return Error(
          "dump.dump_stats requires dump.dump_data \"stats\" (dump_data is \"tensor\" by default)");
    }
    return absl::OkStatus();
  }

  const json& dump_;
};

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

absl::StatusOr<DumpConfig> CheckDumpConfig(const json& dump) {
  if (!dump.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dump must be a JSON object, got ", Shown(dump)));
  }
  return DumpChecker(dump).Check();
}

}  // namespace acl_client
