// The asynchronous operations a session channel gathers before it writes
// them as one message (an AsyncBatch).
//
// The batch lives on an arena that is kept and reset between batches: the
// operations are built by the application's threads and written (then
// dropped) by whichever thread flushes, so heap-allocated operations would be
// freed on another thread than the one that made them — which defeats the
// allocator's per-thread caches and cost launches a third of their time.
#ifndef ACLD_CLIENT_OP_BATCH_H_
#define ACLD_CLIENT_OP_BATCH_H_

#include <cstddef>
#include <memory>

#include "absl/functional/function_ref.h"
#include "google/protobuf/arena.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acl_client {

class OpBatch {
 public:
  OpBatch();

  // Appends an operation that `build` writes in place; `payload_bytes` is what
  // counts toward the batch's size limit (bulk data the op carries).
  void Add(absl::FunctionRef<void(acl::v1::AsyncOp&)> build, size_t payload_bytes);

  int ops() const { return message_->async_batch().ops_size(); }
  size_t payload_bytes() const { return payload_bytes_; }
  // The ClientMessage holding the batch.
  const acl::v1::ClientMessage& message() const { return *message_; }

  // Empties the batch; its first block of memory is kept for the next.
  void Clear();

 private:
  // Enough for a full batch of kernel launches without another block.
  static constexpr size_t kFirstBlockBytes = 256 << 10;

  std::unique_ptr<char[]> first_block_;
  std::unique_ptr<google::protobuf::Arena> arena_;
  acl::v1::ClientMessage* message_ = nullptr;  // on arena_
  size_t payload_bytes_ = 0;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_OP_BATCH_H_
