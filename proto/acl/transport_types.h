// The values the client library and the runtime core exchange, whichever way
// they travel: over the daemon's socket (client/remote_transport.h encodes
// them as proto/acl/v1/runtime.proto messages) or in-process (the embedded
// transport hands them to daemon/core/runtime.h as they are).
//
// Plain values only: what keeps host memory alive while the core uses it
// (HostSpan, PreparedCopy) is the core's business and stays there.
#ifndef ACLD_PROTO_ACL_TRANSPORT_TYPES_H_
#define ACLD_PROTO_ACL_TRANSPORT_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace acld {

// aclInit's settings are for operators (aclctl shows them): at most
// kMaxInitSettings of them travel and are kept, each key and value cut to
// kMaxInitSettingBytes, ending "..." when cut, and no more than
// kMaxInitSettingsBytes of keys and values together (what every status
// reply carries per session: 64 settings of 256 bytes, escaped, were 66 KB a
// session). The config itself goes whole.
inline constexpr size_t kMaxInitSettings = 64;
inline constexpr size_t kMaxInitSettingBytes = 256;
inline constexpr size_t kMaxInitSettingsBytes = 2048;
template <typename Settings>  // a map or a list of (key, value)
std::map<std::string, std::string> ShownInitSettings(const Settings& settings) {
  auto shown = [](const std::string& text) {
    return text.size() <= kMaxInitSettingBytes ? text
                                               : text.substr(0, kMaxInitSettingBytes - 3) + "...";
  };
  std::map<std::string, std::string> kept;
  size_t bytes = 0;
  for (const auto& [key, value] : settings) {
    if (kept.size() == kMaxInitSettings) break;
    std::string shown_key = shown(key), shown_value = shown(value);
    bytes += shown_key.size() + shown_value.size();
    if (bytes > kMaxInitSettingsBytes) break;
    kept.emplace(std::move(shown_key), std::move(shown_value));
  }
  return kept;
}

// What aclInit hands the core once the client has read and validated the config.
struct InitSettings {
  std::string config_content;
  std::optional<int32_t> default_device;
  std::map<std::string, std::string> settings;  // normalised keys, for operators

  bool operator==(const InitSettings& other) const {
    return config_content == other.config_content && default_device == other.default_device &&
           settings == other.settings;
  }
};

// A context as the core issued it (ids are the core's ContextId and StreamId).
struct ContextInfo {
  uint64_t context = 0;
  int32_t device = 0;
  uint64_t default_stream = 0;
};

enum class CopyDirection { kHostToDevice, kDeviceToHost, kDeviceToDevice };

struct MemsetRequest {
  uint64_t device_dst = 0;
  uint64_t max_count = 0;
  int32_t value = 0;
  uint64_t count = 0;
};

// aclrtValueWait: the stream holds until the 64-bit value at `address`
// meets `flag` (ACL_STREAM_WAIT_VALUE_*) against `value`.
struct ValueWaitRequest {
  uint64_t address = 0;
  uint64_t value = 0;
  uint32_t flag = 0;
};

// Float overflow detection on a stream (hal/float_overflow.h): the stream's
// switch (aclrtSetStreamOverflowSwitch), the process's status on its device
// copied to device memory (aclrtGetOverflowStatus) or cleared.
struct OverflowRequest {
  enum class Kind { kSwitchOn, kSwitchOff, kCopyStatus, kClearStatus };
  Kind kind = Kind::kSwitchOn;
  uint64_t device_dst = 0;  // kCopyStatus: OverflowStatus::kBytes there
};

// One input of aclrtRandomNumAsync: `size` bytes given by value, or read from
// device memory at `value` when the task runs (CANN's isAddr).
struct RandomParameter {
  bool at_device = false;
  uint64_t value = 0;
  uint32_t size = 0;
};

// aclrtRandomNumAsync (hal/random_numbers.h). device_workspace is CANN's
// randomParaAddr (0: none).
struct RandomRequest {
  int32_t function = 0;   // aclrtRandomNumFuncType
  int32_t data_type = 0;  // aclDataType
  uint64_t device_result = 0;
  uint64_t device_counter = 0;
  uint64_t device_workspace = 0;
  RandomParameter seed, count, first, second;
};

// Another process's IPC event, as this session holds it.
struct SharedEventInfo {
  uint64_t event = 0;
  int32_t device = 0;
  uint32_t flags = 0;
};

// Another process's IPC notify, as this session holds it.
struct SharedNotifyInfo {
  uint64_t notify = 0;
  int32_t device = 0;
};

// aclrtReduceAsync: `count` bytes of device_dst become dst <kind> src.
struct ReduceRequest {
  uint64_t device_dst = 0;
  uint64_t device_src = 0;
  uint64_t count = 0;
  int32_t kind = 0;       // aclrtReduceKind
  int32_t data_type = 0;  // aclDataType
};

// How many cores of each kind a launch may use: its stream's limit, else the
// process's on the device (aclrtSetStreamResLimit, aclrtSetDeviceResLimit);
// 0: every core of that kind the device has.
struct CoreLimits {
  uint32_t cube = 0;
  uint32_t vector = 0;
};

struct KernelRequest {
  std::string name;
  uint32_t block_dim = 0;
  std::vector<uint64_t> args;
  CoreLimits core_limits;
};

// A placeholder argument (aclrtKernelArgsAppendPlaceHolder): `data` is copied
// to device memory at launch and its device address written into the 8 bytes
// at `offset` of the argument block.
struct Placeholder {
  uint64_t offset = 0;
  std::string data;
};

// aclrtLaunchKernelWithConfig / aclrtLaunchKernel of a loaded function.
struct FunctionLaunch {
  uint64_t function = 0;
  uint32_t block_dim = 0;
  std::string args;
  std::vector<Placeholder> placeholders;
  // aclrtLaunchKernel: the argument block is `args_size` bytes of the
  // session's device memory at `args_address`, read when the stream reaches
  // the launch (`args` is then empty).
  uint64_t args_address = 0;
  uint64_t args_size = 0;
  CoreLimits core_limits;
};

// Bounds on what a launch may carry (hostile input): CANN's own argument
// buffer is 64 KiB with at most 128 parameters. The client refuses more at
// once; the core checks again.
inline constexpr uint64_t kMaxKernelArgsBytes = 64 << 10;
inline constexpr size_t kMaxPlaceholders = 128;

struct EventStatus {
  bool complete = false;               // aclrtQueryEvent
  bool recorded_and_complete = false;  // aclrtQueryEventStatus
};

struct MemInfo {
  uint64_t free = 0;
  uint64_t total = 0;
};

// What a device supports: aclCannAttr and aclrtDevFeatureType values.
struct DeviceFeatures {
  std::vector<int32_t> cann_attributes;
  std::vector<int32_t> capabilities;
  std::map<int32_t, int64_t> device_info;  // aclrtDevAttr value -> what the device states
  std::vector<int32_t> peers;              // the devices whose memory this one reaches
  // Saturation mode and overflow status (hal/float_overflow.h).
  bool float_overflow = false;
  // aclrtMemGetAllocationGranularity's answer; 0: no virtual address
  // management (hal/device.h).
  uint64_t address_granularity = 0;
};

// A physical memory handle's properties (aclrtMemGetAllocationPropertiesFromHandle).
struct PhysicalProperties {
  int32_t device = 0;
  bool huge_pages = false;
};

// How busy a device is, in percent (compute -1: the backend cannot tell).
struct Utilization {
  int32_t compute_percent = -1;
  int32_t memory_percent = 0;
};

// aclrtGetStreamAvailableNum and aclrtGetEventAvailNum: how many more streams
// and events (notifies counted with events) the session may make on a device
// now, the tightest of its own quota, its tenant's, its tenant's share of the
// device and the device's own number; UINT32_MAX when none holds.
struct ObjectsAvailable {
  uint32_t streams = 0;
  uint32_t events = 0;
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_TRANSPORT_TYPES_H_
