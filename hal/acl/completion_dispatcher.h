// The thread of an acl device that calls the streams' listeners.
//
// CANN runs stream callbacks on the thread subscribed with
// aclrtSubscribeReport and forbids them to submit work, synchronize or abort
// (they share the runtime's locks and would deadlock). The HAL's completion
// listener may do all of that, so the streams' vendor callbacks only count
// what finished and hand the stream to this thread, which calls the listeners
// outside any vendor callback. One thread per device keeps each stream's
// reports in order and costs no thread per stream.
#ifndef ACLD_HAL_ACL_COMPLETION_DISPATCHER_H_
#define ACLD_HAL_ACL_COMPLETION_DISPATCHER_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace hal::acl {

class CompletionDispatcher {
 public:
  // Something with reports to deliver (a stream).
  class Client {
   public:
    virtual ~Client() = default;
    // Delivers what is due; runs on the dispatcher thread only.
    virtual void Dispatch() = 0;

   private:
    friend class CompletionDispatcher;
    std::atomic<bool> queued_{false};
  };

  CompletionDispatcher();
  // Stops the thread; clients still queued are dropped. Joins it, unless it
  // is the dispatcher thread itself dropping the last reference (a stream
  // let go of in a listener): the thread then ends on its own.
  ~CompletionDispatcher();

  // Has `client` Dispatch() soon (once, however often it is notified before).
  // Allocates nothing once the queue has grown to its working size.
  void Notify(std::shared_ptr<Client> client);

  bool OnDispatcherThread() const { return std::this_thread::get_id() == thread_id_; }

 private:
  // What the thread uses: it outlives the dispatcher when the thread does.
  struct Shared {
    absl::Mutex mu;
    std::vector<std::shared_ptr<Client>> pending ABSL_GUARDED_BY(mu);
    bool stop ABSL_GUARDED_BY(mu) = false;
  };

  static void Loop(std::shared_ptr<Shared> shared);

  const std::shared_ptr<Shared> shared_;
  std::thread thread_;
  std::thread::id thread_id_;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_COMPLETION_DISPATCHER_H_
