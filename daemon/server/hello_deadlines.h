// Cancels Session streams that do not say Hello in time, from one thread for
// all of them (a pending stream costs gRPC's handler thread and nothing more).
#ifndef ACLD_DAEMON_SERVER_HELLO_DEADLINES_H_
#define ACLD_DAEMON_SERVER_HELLO_DEADLINES_H_

#include <cstdint>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace acld::server {

class HelloDeadlines {
 public:
  HelloDeadlines();
  // Fires nothing more.
  ~HelloDeadlines();
  HelloDeadlines(const HelloDeadlines&) = delete;
  HelloDeadlines& operator=(const HelloDeadlines&) = delete;

  // `context` is cancelled (TryCancel) at `deadline` unless disarmed first.
  uint64_t Arm(grpc::ServerContextBase* context, absl::Time deadline);
  // After this returns the context is never touched again; true when the
  // deadline had not fired.
  bool Disarm(uint64_t id);

  uint64_t fired() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::pair<absl::Time, grpc::ServerContextBase*>> armed_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, uint64_t>> order_ ABSL_GUARDED_BY(mu_);
  uint64_t fired_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_HELLO_DEADLINES_H_
