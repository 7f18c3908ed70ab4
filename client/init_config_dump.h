// The `dump` block of the aclInit config: which dump it asks for, and the
// rules that block must follow (SPEC 4.1: the documented mutual exclusions and
// where dump_path is required). The rules themselves are listed at the top of
// init_config_dump.cc.
#ifndef ACLD_CLIENT_INIT_CONFIG_DUMP_H_
#define ACLD_CLIENT_INIT_CONFIG_DUMP_H_

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace acl_client {

// What the `dump` block asks for (after validation).
enum class DumpKind {
  kNone,       // no dump block, an empty one, or one that enables nothing
  kData,       // model dump (non-empty dump_list) or single-op dump (dump_op_switch "on")
  kException,  // dump_scene lite_exception / aic_err_{brief,norm,detail}_dump
  kOverflow,   // dump_debug "on"
  kWatcher,    // dump_scene "watcher"
};

// Printable name of a DumpKind ("none", "data", "exception", "overflow", "watcher").
const char* DumpKindName(DumpKind kind);

// Summary of a valid `dump` block.
struct DumpConfig {
  DumpKind kind = DumpKind::kNone;
  std::string path;  // dump.dump_path, "" when absent
};

// Checks the value of the top-level "dump" key. A broken rule comes back as
// InvalidArgument whose message names the key, the bad value and what is
// allowed; it says nothing about which config file it was, nor which aclError
// to return, because the caller (ParseInitConfig) owns both.
absl::StatusOr<DumpConfig> CheckDumpConfig(const nlohmann::json& dump);

}  // namespace acl_client

#endif  // ACLD_CLIENT_INIT_CONFIG_DUMP_H_
