// Kernel argument lists (aclrtKernelArgsInit/Append/AppendPlaceHolder/
// GetPlaceHolderBuffer/Finalize), built in the process and sent whole with a
// launch.
//
// As in CANN, the list a thread gets from aclrtKernelArgsInit is owned by the
// library and replaced by the thread's next aclrtKernelArgsInit; the
// application never frees it (docs/api-compat.md).
#ifndef ACLD_CLIENT_KERNEL_ARGS_H_
#define ACLD_CLIENT_KERNEL_ARGS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/acl/transport_types.h"

namespace acl_client {

class KernelArgs {
 public:
  explicit KernelArgs(uint64_t function) : function_(function) {}

  uint64_t function() const { return function_; }

  // Copies `size` bytes to the end of the block (8-byte aligned); returns the
  // parameter's index.
  absl::StatusOr<size_t> Append(const void* param, size_t size);
  // Reserves an 8-byte slot whose value is the device address of data the
  // application writes into PlaceholderBuffer.
  absl::StatusOr<size_t> AppendPlaceholder();
  // Host memory of `size` bytes for placeholder `param` (after every append).
  absl::StatusOr<void*> PlaceholderBuffer(size_t param, size_t size);
  absl::Status Finalize();

  // The launch of `block_dim` blocks that this finalized list describes.
  absl::StatusOr<acld::FunctionLaunch> ToLaunch(uint32_t block_dim) const;

 private:
  struct Param {
    uint64_t offset = 0;
    bool placeholder = false;
    std::unique_ptr<char[]> data;  // a placeholder's buffer
    size_t data_size = 0;
  };

  absl::StatusOr<size_t> AddSlot(size_t size, bool placeholder);

  const uint64_t function_;
  std::string block_;
  std::vector<Param> params_;
  bool buffers_taken_ = false;  // no more appends once a buffer was handed out
  bool finalized_ = false;
};

// The lists of every thread, by handle.
class KernelArgsTable {
 public:
  static KernelArgsTable& Get();

  // A fresh list for `function`, replacing the calling thread's previous one.
  void* Init(uint64_t function);
  // The list behind a handle; shared, so that a thread replacing its list
  // cannot pull it from under another thread using the old handle.
  absl::StatusOr<std::shared_ptr<KernelArgs>> Find(const void* handle, const char* api);

 private:
  absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<KernelArgs>> lists_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_KERNEL_ARGS_H_
