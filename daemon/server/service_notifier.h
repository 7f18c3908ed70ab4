// What acld tells systemd (a Type=notify unit, tools/acld.service): READY=1
// once it serves, STOPPING=1 when it shuts down, and, when the unit sets
// WatchdogSec=, WATCHDOG=1 at half that interval for as long as acld is
// healthy (health.h) — an acld that stops serving stops the pings, and
// systemd restarts it. Without NOTIFY_SOCKET (not run by systemd) it does
// nothing.
#ifndef ACLD_DAEMON_SERVER_SERVICE_NOTIFIER_H_
#define ACLD_DAEMON_SERVER_SERVICE_NOTIFIER_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace acld::server {

class ServiceNotifier {
 public:
  // `health` is asked before READY=1 and before each watchdog ping.
  explicit ServiceNotifier(std::function<absl::Status()> health);
  // Stops the watchdog's thread.
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // READY=1 with `status` once healthy (false, and nothing sent, when not),
  // then the watchdog's pings, if systemd asked for them.
  bool Ready(const std::string& status);
  // STOPPING=1; the pings stop.
  void Stopping();

 private:
  void Watch(absl::Duration interval);

  const std::function<absl::Status()> health_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SERVICE_NOTIFIER_H_
