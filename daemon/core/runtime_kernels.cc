// Runtime: kernel binaries, their functions and launches of them
// (aclrtBinaryLoadFromData/File, aclrtBinaryGetFunction, aclrtLaunchKernel*).
// A binary is hostile bytes: the device parses it (the sim only reads names
// from it), its size is bounded and charged to the session, and a function
// handle is valid only in the session that asked for it, while its binary is
// loaded.
#include <cstdint>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/pinned_memory.h"
#include "daemon/core/runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

// What a loaded binary and a function handle cost the daemon beyond the
// binary's bytes (its tables, the handle's entries), charged with them so that
// many tiny binaries or handles cannot hold more than the limit says.
constexpr uint64_t kBinaryOverheadBytes = 4096;
constexpr uint64_t kFunctionOverheadBytes = 256;
// Longer than any kernel's (mangled) name; a longer one is not looked up.
constexpr size_t kMaxKernelNameBytes = 4096;

// What a binary of `bytes` is charged (a size this close to the top of the
// range is refused, not wrapped).
uint64_t BinaryCharge(uint64_t bytes) {
  return bytes > UINT64_MAX - kBinaryOverheadBytes ? UINT64_MAX : bytes + kBinaryOverheadBytes;
}

absl::Status UnknownBinary(BinaryId binary) {
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat("binary handle ", binary,
                                " is not a loaded binary of this process (unloaded, or another "
                                "process's handle)"));
}

absl::Status UnknownFunction(FunctionId function) {
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat("function handle ", function,
                                " is not a function of a loaded binary of this process"));
}

}  // namespace

absl::StatusOr<BinaryId> Runtime::LoadBinary(SessionId id, int32_t device_id,
                                             absl::string_view binary,
                                             std::unique_ptr<BinaryCharges::Held> held) {
  if (binary.empty()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtBinaryLoadFromData: the binary is empty");
  }
  // Charged before the device parses anything, until the last holder of
  // the executable lets go.
  if (held == nullptr) {
    ACL_ASSIGN_OR_RETURN(held, ReserveBinaryLoad(id, device_id, binary.size()));
  }
  // Parsed with no lock held: a large binary must not stall other sessions.
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<hal::Executable> executable,
                       backend_->device(device_id).LoadExecutable(binary));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  const BinaryId binary_id = next_handle_++;
  LoadedBinary& loaded = session->binaries[binary_id];
  loaded.device = device_id;
  loaded.executable =
      BinaryCharges::Holding(std::move(executable), std::move(held), &loaded.charge);
  return binary_id;
}

absl::StatusOr<std::unique_ptr<BinaryCharges::Held>> Runtime::ReserveBinaryLoad(
    SessionId id, int32_t device_id, uint64_t bytes) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  const uint64_t device_limit = backend_->device(device_id).info().max_executable_bytes;
  if (device_limit != 0 && bytes > device_limit) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclrtBinaryLoadFromData: a binary of ", bytes,
                                  " bytes; the device loads at most ", device_limit));
  }
  absl::ReaderMutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  return binary_charges_.Charge(id, TenantOf(*session), BinaryCharge(bytes));
}

absl::Status Runtime::UnloadBinary(SessionId id, BinaryId binary) {
  std::shared_ptr<hal::Executable> unloaded;  // released with no lock held
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = session->binaries.find(binary);
  if (it == session->binaries.end()) return UnknownBinary(binary);
  for (const auto& [name, function] : it->second.functions) session->functions.erase(function);
  // Its charge stays with launches of it still queued.
  unloaded = std::move(it->second.executable);
  session->binaries.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<FunctionId> Runtime::GetFunction(SessionId id, BinaryId binary,
                                                const std::string& name) {
  if (name.size() > kMaxKernelNameBytes) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclrtBinaryGetFunction: a kernel name of ", name.size(),
                                  " bytes; at most ", kMaxKernelNameBytes));
  }
  std::shared_ptr<hal::Executable> executable;
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
    auto it = session->binaries.find(binary);
    if (it == session->binaries.end()) return UnknownBinary(binary);
    // One handle per name: asking again cannot grow the table.
    auto known = it->second.functions.find(name);
    if (known != it->second.functions.end()) return known->second;
    executable = it->second.executable;
  }
  // Looked up with no lock held: the device's lookup in a hostile binary
  // must not stall other sessions.
  absl::StatusOr<const hal::Function*> function = executable->GetFunction(name);
  if (!function.ok()) {
    return AclStatus(ACL_ERROR_RT_KERNEL_LOOKUP,
                     absl::StrCat("aclrtBinaryGetFunction: the binary has no kernel named '",
                                  absl::CHexEscape(name.substr(0, 128)), "'"));
  }
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = session->binaries.find(binary);
  // Unloaded meanwhile by another thread of the session.
  if (it == session->binaries.end() || it->second.executable != executable) {
    return UnknownBinary(binary);
  }
  LoadedBinary& loaded = it->second;
  auto known = loaded.functions.find(name);  // asked for by another thread meanwhile
  if (known != loaded.functions.end()) return known->second;
  ACL_RETURN_IF_ERROR(loaded.charge->Add(kFunctionOverheadBytes));
  const FunctionId function_id = next_handle_++;
  loaded.functions[name] = function_id;
  session->functions[function_id] =
      LoadedFunction{binary, loaded.device, *function, loaded.executable};
  return function_id;
}

absl::StatusOr<uint64_t> Runtime::LaunchFunction(SessionId id, StreamId stream_id,
                                                 uint64_t thread, FunctionLaunch launch) {
  if (launch.args.size() > kMaxKernelArgsBytes) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("kernel launch: ", launch.args.size(),
                                  " bytes of arguments; at most ", kMaxKernelArgsBytes));
  }
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  LoadedFunction function;
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
    auto it = session->functions.find(launch.function);
    if (it == session->functions.end()) return UnknownFunction(launch.function);
    function = it->second;
  }
  if (function.device != stream->options().device) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "kernel launch: the binary was loaded on another device than the "
                     "stream's");
  }
  if (launch.args_address == 0) {
    return Launch(id, stream, thread, *function.function, std::move(function.executable),
                  launch.block_dim, launch.core_limits, std::move(launch.args),
                  std::move(launch.placeholders), launch.function);
  }
  return LaunchWithDeviceArgs(id, stream, thread, std::move(function), launch);
}

absl::StatusOr<uint64_t> Runtime::LaunchWithDeviceArgs(SessionId id,
                                                       const std::shared_ptr<Stream>& stream,
                                                       uint64_t thread, LoadedFunction function,
                                                       const FunctionLaunch& launch) {
  if (launch.args_size == 0 || launch.args_size > kMaxKernelArgsBytes) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclrtLaunchKernel: argsSize must be 1 .. ",
                                  kMaxKernelArgsBytes));
  }
  // The block is the session's own memory, checked now; its bytes are read
  // by a host task, which runs once the device work before it has finished
  // (that work may be what writes them), and the launch follows it.
  ACL_ASSIGN_OR_RETURN(ResolvedRange source,
                       memory_.Resolve(id, launch.args_address, launch.args_size));
  struct DeviceArgs {
    ResolvedRange source;
    uint64_t size;
    std::string bytes;
  };
  auto args = std::make_shared<DeviceArgs>(DeviceArgs{std::move(source), launch.args_size, {}});
  hal::Device* device = &backend_->device(stream->options().device);
  ACL_RETURN_IF_ERROR(
      Enqueue(id, stream, thread, launch.args_size,
              [args, device](const TaskResume&) -> std::optional<absl::Status> {
                args->bytes.resize(args->size);
                hal::Transfer read;
                read.device_src = args->source.span;
                read.host_dst = args->bytes.data();
                read.host_reads_next = true;  // the launch reads them
                read.count = args->size;
                return device->Copy(read);
              },
              nullptr, "kernel arguments")
          .status());
  const SessionId session = id;
  const int32_t device_id = stream->options().device;
  const uint32_t block_dim = launch.block_dim;
  const CoreLimits limits = launch.core_limits;
  // The launch is prepared (its ranges pinned) only once its arguments are
  // read: until then, what the session lets go waits for it as for a kernel
  // whose ranges are unknown (release_fence.h). The launch keeps it until
  // the device reported it.
  std::shared_ptr<void> until_prepared = memory_.HoldForOpaqueWork(id);
  return EnqueueDeviceWork(
      id, stream, thread, launch.args_size, "kernel",
      [this, session, device_id, block_dim, limits, args, until_prepared,
       function = std::move(function)](hal::Stream& device) -> absl::StatusOr<uint64_t> {
        ACL_ASSIGN_OR_RETURN(KernelLaunch prepared,
                             PrepareLaunch(session, device_id, *function.function,
                                           function.executable, block_dim, limits,
                                           std::move(args->bytes), {}));
        // The pins live as long as the device item (its resolver holds them).
        if (until_prepared != nullptr) prepared.pinned->HoldOpaque(until_prepared);
        return prepared.SubmitTo(device);
      });
}

absl::Status Runtime::PlacePlaceholders(SessionId id, int32_t device_id,
                                        std::vector<Placeholder> placeholders, std::string& args,
                                        PinnedMemory& pinned) {
  if (placeholders.size() > kMaxPlaceholders) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("kernel launch: ", placeholders.size(),
                                  " placeholders; at most ", kMaxPlaceholders));
  }
  // One allocation holds every placeholder's data, each 8-byte aligned.
  uint64_t total = 0;
  std::vector<uint64_t> data_offsets;
  for (const Placeholder& placeholder : placeholders) {
    if (placeholder.offset > args.size() || args.size() - placeholder.offset < 8 ||
        placeholder.offset % 8 != 0) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat("kernel launch: placeholder slot at byte ", placeholder.offset,
                                    " is not an aligned 8-byte slot of the ", args.size(),
                                    "-byte argument block"));
    }
    // Each is at most 64 KiB before it is rounded: no overflow below.
    const uint64_t rounded = placeholder.data.size() > kMaxKernelArgsBytes
                                 ? kMaxKernelArgsBytes + 1
                                 : (placeholder.data.size() + 7) / 8 * 8;
    if (placeholder.data.empty() || rounded > kMaxKernelArgsBytes - total) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       "kernel launch: placeholder data must be 1 byte .. 64 KiB in all");
    }
    data_offsets.push_back(total);
    total += rounded;
  }
  // The session never reaches it: only the launch's pin holds it.
  ACL_ASSIGN_OR_RETURN(ResolvedRange resolved,
                       memory_.AllocateHeld(id, device_id, total, "kernel launch placeholders"));
  const uint64_t address = resolved.span.address();
  hal::Device& device = backend_->device(device_id);
  for (size_t i = 0; i < placeholders.size(); ++i) {
    hal::DeviceSpan span = resolved.span;
    span.offset += data_offsets[i];
    hal::Transfer transfer;
    transfer.device_dst = span;
    transfer.host_src = placeholders[i].data.data();
    transfer.count = placeholders[i].data.size();
    ACL_RETURN_IF_ERROR(device.Copy(transfer));
    const uint64_t slot_value = address + data_offsets[i];
    std::memcpy(args.data() + placeholders[i].offset, &slot_value, 8);
  }
  pinned.Add(hal::DeviceRange{address, total}, std::move(resolved));
  return absl::OkStatus();
}

}  // namespace acld
