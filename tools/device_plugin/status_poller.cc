#include "tools/device_plugin/status_poller.h"


#include "spdlog/spdlog.h"

namespace acld::device_plugin {
namespace {

// acld has as many devices as its backend; anything past this is not a
// real answer.
constexpr int kMaxDevices = 1024;

bool SameDevices(const DeviceSnapshot& a, const DeviceSnapshot& b) {
  if (a.acld_reachable != b.acld_reachable || a.devices.size() != b.devices.size()) return false;
  auto it = b.devices.begin();
  for (const auto& [id, device] : a.devices) {
    if (it->first != id || it->second.memory_bytes != device.memory_bytes ||
        it->second.healthy != device.healthy) {
      return false;
    }
    ++it;
  }
  return true;
}

}  // namespace

void ApplyStatus(const acl::v1::StatusReply* reply, DeviceSnapshot* snapshot) {
  if (reply == nullptr) {
    snapshot->acld_reachable = false;
    return;
  }
  snapshot->acld_reachable = true;
  snapshot->devices.clear();
  int seen = 0;
  for (const acl::v1::DeviceInfo& info : reply->devices()) {
    if (++seen > kMaxDevices) break;
    if (info.id() < 0 || info.id() > kMaxDeviceId) continue;
    if (snapshot->devices.count(info.id()) != 0) continue;
    snapshot->devices[info.id()] = KnownDevice{info.memory_bytes(), info.healthy()};
  }
}

StatusPoller::StatusPoller(AdminClient& admin, absl::Duration interval)
    : admin_(admin), interval_(interval) {}

StatusPoller::~StatusPoller() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StatusPoller::Start() {
  PollOnce();
  thread_ = std::thread([this] { Run(); });
}

void StatusPoller::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_);
      if (stopping_) return;
    }
    PollOnce();
  }
}

void StatusPoller::PollOnce() {
  absl::MutexLock poll_lock(&poll_mu_);
  const absl::StatusOr<acl::v1::StatusReply> reply = admin_.GetStatus();
  absl::MutexLock lock(&mu_);
  DeviceSnapshot next = snapshot_;
  ApplyStatus(reply.ok() ? &*reply : nullptr, &next);
  if (SameDevices(next, snapshot_) && version_ != 0) return;
  if (!reply.ok() && snapshot_.acld_reachable) {
    spdlog::warn("acld does not answer ({}): every device is unhealthy until it does",
                 reply.status().ToString());
  } else if (reply.ok() && !snapshot_.acld_reachable) {
    spdlog::info("acld answers: {} devices", next.devices.size());
  }
  snapshot_ = std::move(next);
  ++version_;
}

StatusPoller::Versioned StatusPoller::Current() const {
  absl::MutexLock lock(&mu_);
  return Versioned{snapshot_, version_};
}

StatusPoller::Versioned StatusPoller::WaitForChange(uint64_t seen, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return version_ != seen || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return Versioned{snapshot_, version_};
}

StatusPoller::Versioned StatusPoller::Refresh() {
  PollOnce();
  return Current();
}

}  // namespace acld::device_plugin
