#include "client/handle_table.h"

namespace acl_client {

bool HandleTable::AddContext(const acld::ContextInfo& context) {
  absl::MutexLock lock(&mu_);
  const bool added = contexts_.count(context.context) == 0;
  contexts_[context.context] = context;
  streams_[context.default_stream] = StreamFacts{context.device};
  return added;
}

void HandleTable::RemoveContext(uint64_t context) {
  absl::MutexLock lock(&mu_);
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  streams_.erase(it->second.default_stream);
  contexts_.erase(it);
}

std::optional<acld::ContextInfo> HandleTable::FindContext(uint64_t context) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return std::nullopt;
  return it->second;
}

void HandleTable::AddStream(uint64_t stream, const StreamFacts& facts) {
  absl::MutexLock lock(&mu_);
  streams_[stream] = facts;
}

void HandleTable::RemoveStream(uint64_t stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

std::optional<int32_t> HandleTable::StreamDevice(uint64_t stream) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return std::nullopt;
  return it->second.device;
}

std::optional<StreamFacts> HandleTable::FindStream(uint64_t stream) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return std::nullopt;
  return it->second;
}

bool HandleTable::UpdateStream(uint64_t stream, absl::FunctionRef<void(StreamFacts&)> update) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return false;
  update(it->second);
  return true;
}

void HandleTable::AddEvent(uint64_t event, const EventFacts& facts) {
  absl::MutexLock lock(&mu_);
  events_[event] = facts;
}

std::optional<EventFacts> HandleTable::FindEvent(uint64_t event) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = events_.find(event);
  if (it == events_.end()) return std::nullopt;
  return it->second;
}

void HandleTable::RemoveEvent(uint64_t event) {
  absl::MutexLock lock(&mu_);
  events_.erase(event);
}

bool HandleTable::HasEvent(uint64_t event) const {
  absl::ReaderMutexLock lock(&mu_);
  return events_.count(event) > 0;
}

void HandleTable::AddNotify(uint64_t notify, int32_t device) {
  absl::MutexLock lock(&mu_);
  notifies_[notify] = device;
}

void HandleTable::RemoveNotify(uint64_t notify) {
  absl::MutexLock lock(&mu_);
  notifies_.erase(notify);
}

bool HandleTable::HasNotify(uint64_t notify) const {
  absl::ReaderMutexLock lock(&mu_);
  return notifies_.count(notify) > 0;
}

void HandleTable::AddDeviceReference(int32_t device) {
  absl::MutexLock lock(&mu_);
  ++device_refs_[device];
}

void HandleTable::DropDeviceReference(int32_t device, bool all) {
  absl::MutexLock lock(&mu_);
  auto it = device_refs_.find(device);
  if (it == device_refs_.end()) return;
  if (all || --it->second == 0) {
    device_refs_.erase(it);
    ForgetDeviceLocked(device);
  }
}

std::vector<uint64_t> HandleTable::StreamsGoneWithReference(int32_t device, bool all) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<uint64_t> streams;
  auto refs = device_refs_.find(device);
  if (refs == device_refs_.end() || (!all && refs->second > 1)) return streams;
  for (const auto& [stream, facts] : streams_) {
    if (facts.device == device) streams.push_back(stream);
  }
  return streams;
}

void HandleTable::AddAllocation(uint64_t address, uint64_t size, int32_t device) {
  absl::MutexLock lock(&mu_);
  allocations_[address] = Allocation{size, device};
}

std::optional<HandleTable::Allocation> HandleTable::RemoveAllocation(uint64_t address) {
  absl::MutexLock lock(&mu_);
  auto it = allocations_.find(address);
  if (it == allocations_.end()) return std::nullopt;
  const Allocation removed = it->second;
  allocations_.erase(it);
  return removed;
}

bool HandleTable::InAllocation(uint64_t address) const {
  return AllocationDevice(address).has_value();
}

std::optional<int32_t> HandleTable::AllocationDevice(uint64_t address) const {
  absl::MutexLock lock(&mu_);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return std::nullopt;
  --it;
  if (address - it->first >= it->second.size) return std::nullopt;
  return it->second.device;
}

void HandleTable::EnablePeer(int32_t device, int32_t peer) {
  absl::MutexLock lock(&mu_);
  peers_.insert({device, peer});
}

bool HandleTable::DisablePeer(int32_t device, int32_t peer) {
  absl::MutexLock lock(&mu_);
  return peers_.erase({device, peer}) == 1;
}

bool HandleTable::PeerEnabled(int32_t device, int32_t peer) const {
  absl::MutexLock lock(&mu_);
  return peers_.count({device, peer}) == 1;
}

void HandleTable::ForgetDeviceLocked(int32_t device) {
  for (auto it = peers_.begin(); it != peers_.end();) {
    it = it->first == device ? peers_.erase(it) : std::next(it);
  }
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    it = it->second.device == device ? allocations_.erase(it) : std::next(it);
  }
  for (auto it = contexts_.begin(); it != contexts_.end();) {
    it = it->second.device == device ? contexts_.erase(it) : std::next(it);
  }
  for (auto it = streams_.begin(); it != streams_.end();) {
    it = it->second.device == device ? streams_.erase(it) : std::next(it);
  }
  for (auto it = events_.begin(); it != events_.end();) {
    it = it->second.device == device ? events_.erase(it) : std::next(it);
  }
  for (auto it = notifies_.begin(); it != notifies_.end();) {
    it = it->second == device ? notifies_.erase(it) : std::next(it);
  }
}

void HandleTable::Clear() {
  absl::MutexLock lock(&mu_);
  contexts_.clear();
  streams_.clear();
  events_.clear();
  notifies_.clear();
  device_refs_.clear();
  allocations_.clear();
  peers_.clear();
}

}  // namespace acl_client
