// The handles this process holds (contexts, streams, events, notifies), so that the
// library can refuse a bad handle at once and resolve a NULL stream without
// asking the daemon. The daemon checks every handle again: this table is the
// fast path, not the authority.
#ifndef ACLD_CLIENT_HANDLE_TABLE_H_
#define ACLD_CLIENT_HANDLE_TABLE_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "proto/acl/transport_types.h"

namespace acl_client {

// What this process created a stream with (aclrtStreamGetPriority,
// aclrtStreamGetFlags). A context's default stream has the defaults.
struct StreamFacts {
  int32_t device = 0;
  uint32_t priority = 0;
  uint32_t flags = 0;
  // aclrtSetStreamResLimit, by aclrtDevResLimitType; 0: not set.
  std::array<uint32_t, 2> core_limits = {0, 0};
  bool overflow_switch = false;  // aclrtSetStreamOverflowSwitch
};

// What this process created an event with.
struct EventFacts {
  int32_t device = 0;
  uint32_t flags = 0;
  bool ex = false;  // made by aclrtCreateEventExWithFlag
};

class HandleTable {
 public:
  // True when the context is new to the table (a repeated aclrtSetDevice
  // finds its device's default context there already).
  bool AddContext(const acld::ContextInfo& context);
  void RemoveContext(uint64_t context);
  std::optional<acld::ContextInfo> FindContext(uint64_t context) const;

  void AddStream(uint64_t stream, const StreamFacts& facts);
  void RemoveStream(uint64_t stream);
  std::optional<int32_t> StreamDevice(uint64_t stream) const;
  std::optional<StreamFacts> FindStream(uint64_t stream) const;
  // Applies `update` to a live stream's facts; false when there is no such stream.
  bool UpdateStream(uint64_t stream, absl::FunctionRef<void(StreamFacts&)> update);

  void AddEvent(uint64_t event, const EventFacts& facts);
  std::optional<EventFacts> FindEvent(uint64_t event) const;
  void RemoveEvent(uint64_t event);
  bool HasEvent(uint64_t event) const;

  void AddNotify(uint64_t notify, int32_t device);
  void RemoveNotify(uint64_t notify);
  bool HasNotify(uint64_t notify) const;

  // Device memory this process allocated: a pointer inside one is a device
  // pointer (ACL_MEMCPY_DEFAULT, checks of copy kinds), whatever the
  // backend's address layout.
  void AddAllocation(uint64_t address, uint64_t size, int32_t device);
  struct Allocation {
    uint64_t size;
    int32_t device;
  };
  // Takes the allocation at `address` out (nullopt: none was there).
  std::optional<Allocation> RemoveAllocation(uint64_t address);
  bool InAllocation(uint64_t address) const;
  // The device of the allocation holding `address`, if this process has one.
  std::optional<int32_t> AllocationDevice(uint64_t address) const;

  // Peer access this process enabled (aclrtDeviceEnablePeerAccess): from
  // `device` to `peer`'s memory. It goes with the device's last reference.
  void EnablePeer(int32_t device, int32_t peer);
  bool DisablePeer(int32_t device, int32_t peer);  // false: it was not enabled
  bool PeerEnabled(int32_t device, int32_t peer) const;

  // Device references as the daemon counts them (aclrtSetDevice and contexts
  // add one, aclrtResetDevice and aclrtDestroyContext drop one). When a
  // device's count reaches zero the daemon released everything on it, and so
  // does this table.
  void AddDeviceReference(int32_t device);
  void DropDeviceReference(int32_t device, bool all);
  // The streams (default ones included) that DropDeviceReference(device,
  // all) would forget.
  std::vector<uint64_t> StreamsGoneWithReference(int32_t device, bool all) const;
  // After a full finalize: nothing is held anymore.
  void Clear();

 private:
  void ForgetDeviceLocked(int32_t device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<uint64_t, acld::ContextInfo> contexts_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, StreamFacts> streams_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, EventFacts> events_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, int32_t> notifies_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, uint32_t> device_refs_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Allocation> allocations_ ABSL_GUARDED_BY(mu_);  // by start address
  std::set<std::pair<int32_t, int32_t>> peers_ ABSL_GUARDED_BY(mu_);  // (device, peer)
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_HANDLE_TABLE_H_
