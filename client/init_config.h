// Reads and validates the JSON config file given to aclInit (and aclnnInit).
//
// The client library validates the config before it talks to the daemon, so
// a bad file fails fast with the exact CANN error code and a message that
// names the file, the key, the bad value and what is allowed. The daemon then
// only stores the normalised result (and checks what needs host knowledge,
// such as the default device being in range). The rules and where each one
// comes from are listed at the top of init_config.cc (init_config_dump.cc for
// the `dump` block).
#ifndef ACLD_CLIENT_INIT_CONFIG_H_
#define ACLD_CLIENT_INIT_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/init_config_dump.h"
#include "proto/acl/protocol.h"
#include "proto/acl/transport_types.h"

namespace acl_client {

// The limits CANN puts on the config file (the nesting ones are SPEC 4's too).
inline constexpr int kMaxConfigObjectDepth = 10;  // levels of `{`
inline constexpr int kMaxConfigArrayDepth = 10;   // levels of `[`
inline constexpr uint64_t kMaxConfigFileBytes = acld::kMaxInitConfigBytes;
static_assert(kMaxConfigFileBytes +
                      acld::kMaxInitSettings * (2 * acld::kMaxInitSettingBytes + 16) +
                      (64 << 10) <
                  acld::kMaxRequestBytes,
              "aclInit's request carries the config file and the settings shown of it");

struct InitConfig {
  // Raw file content, "" when there is no config. This is what init callbacks
  // receive and what the daemon compares against the first successful init.
  std::string content;

  // err_msg_mode: 0 thread-level (default), 1 process-level.
  int err_msg_mode = 0;

  // defaultDevice.default_device. Only the syntax is checked here (a string of
  // decimal digits, as CANN requires); the range is checked by the daemon,
  // which knows the device count.
  std::optional<int32_t> default_device;

  // StackSize.aicore_stack_size: 0 = not set; otherwise rounded up to a
  // multiple of 16 KiB, values below 32 KiB become 32 KiB.
  uint64_t aicore_stack_size = 0;
  // StackSize.simt_stack_size / simt_divergence_stack_size: 0 = not set
  // (runtime default); otherwise rounded up to a multiple of 128.
  uint64_t simt_stack_size = 0;
  uint64_t simt_divergence_stack_size = 0;

  // Top-level printf FIFO sizes, rounded up to a multiple of 8.
  uint64_t simt_printf_fifo_size = 2ull * 1024 * 1024;     // 1 MiB .. 64 MiB
  uint64_t simd_printf_fifo_size_per_core = 32ull * 1024;  // 1 KiB .. 64 MiB

  // max_opqueue_num: positive, default 20000.
  uint64_t max_opqueue_num = 20000;

  // Summary of the validated `dump` block.
  DumpKind dump_kind = DumpKind::kNone;
  std::string dump_path;  // dump.dump_path, "" when absent

  // For display by the admin CLI, sorted by key: every key present in the file
  // as "dotted.path" -> value. Recognised keys carry their normalised value as
  // plain text (e.g. "StackSize.aicore_stack_size" -> "49152",
  // "dump.dump_scene" -> "lite_exception"); everything else (unknown keys,
  // objects, arrays) carries its value as compact JSON text.
  std::vector<std::pair<std::string, std::string>> settings;
};

// Reads `config_path` (nullptr or "" means an empty config) and validates it.
// Errors carry (see acld::AclCodeOf) ACL_ERROR_INVALID_FILE,
// ACL_ERROR_PARSE_FILE or ACL_ERROR_INVALID_PARAM.
absl::StatusOr<InitConfig> ReadInitConfig(const char* config_path);

// Validates already-read content (used by tests and by ReadInitConfig).
absl::StatusOr<InitConfig> ParseInitConfig(std::string content);

// Only the file-reading part (aclnnInit reuses this; same file errors):
// nullptr or "" -> "", a missing, unreadable, non-regular or over-10-MiB file
// -> ACL_ERROR_INVALID_FILE. The content is not checked.
absl::StatusOr<std::string> ReadConfigFile(const char* config_path);

}  // namespace acl_client

#endif  // ACLD_CLIENT_INIT_CONFIG_H_
