#include "daemon/server/service_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace acld::server {

ServiceNotifier::ServiceNotifier(std::function<absl::Status()> health)
    : health_(std::move(health)) {}

ServiceNotifier::~ServiceNotifier() {
  Stopping();
  if (watchdog_.joinable()) watchdog_.join();
}

bool ServiceNotifier::Ready(const std::string& status) {
  const absl::Status healthy = health_();
  if (!healthy.ok()) {
    spdlog::error("acld is not ready: {}", std::string(healthy.message()));
    return false;
  }
  sd_notify(0, absl::StrCat("READY=1\nSTATUS=", status).c_str());
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    const absl::Duration interval = absl::Microseconds(static_cast<int64_t>(usec)) / 2;
    watchdog_ = std::thread([this, interval] { Watch(interval); });
    spdlog::info("systemd watchdog: pinging every {} while healthy",
                 absl::FormatDuration(interval));
  }
  return true;
}

void ServiceNotifier::Stopping() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
}

void ServiceNotifier::Watch(absl::Duration interval) {
  bool was_healthy = true;
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval)) {
    mu_.Unlock();
    const absl::Status healthy = health_();
    if (healthy.ok()) {
      sd_notify(0, was_healthy ? "WATCHDOG=1" : "WATCHDOG=1\nSTATUS=serving again");
      if (!was_healthy) spdlog::info("acld is healthy again");
    } else if (was_healthy) {
      // No ping: systemd restarts acld once WatchdogSec passes without one.
      spdlog::error("acld is unhealthy, so the systemd watchdog is not fed: {}",
                    std::string(healthy.message()));
      sd_notify(0, absl::StrCat("STATUS=unhealthy: ", healthy.message()).c_str());
    }
    was_healthy = healthy.ok();
    mu_.Lock();
  }
}

}  // namespace acld::server
