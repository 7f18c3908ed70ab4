// aclrtRegStreamStateCallback's registry: named callbacks the library runs
// on the calling thread right after a stream comes into being
// (ACL_RT_STREAM_STATE_CREATE_POST) and right before one goes
// (ACL_RT_STREAM_STATE_DESTROY_PRE). That covers streams the application
// creates and destroys, and contexts' default streams: they come with a
// context (aclrtSetDevice's first reference to a device, aclrtCreateContext)
// and go with it (aclrtDestroyContext, the reset that drops the device's last
// reference, which takes the device's other streams along).
#ifndef ACLD_CLIENT_STREAM_STATE_CALLBACKS_H_
#define ACLD_CLIENT_STREAM_STATE_CALLBACKS_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"

namespace acl_client {

class StreamStateCallbacks {
 public:
  // A process may register this many; a name may be this long.
  static constexpr size_t kMaxCallbacks = 64;
  static constexpr size_t kMaxNameBytes = 128;

  static StreamStateCallbacks& Get();

  // `callback` NULL removes `name`'s. A name already registered is refused
  // (CANN does not allow registering twice), as are a NULL or empty name, a
  // name longer than kMaxNameBytes, and a removal of a name not registered.
  absl::Status Register(const char* name, aclrtStreamStateCallback callback, void* args);

  // Runs every registered callback for `streams`, in name order, with no
  // lock held (a callback may register or call the runtime).
  void Notify(const std::vector<uint64_t>& streams, aclrtStreamState state) const;

 private:
  struct Entry {
    aclrtStreamStateCallback callback;
    void* args;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_STREAM_STATE_CALLBACKS_H_
