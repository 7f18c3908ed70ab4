// Bulk bytes between the process and acld: copies and kernel binaries.
//
// Bulk bytes avoid the session stream (docs/architecture.md, "Bulk bytes
// avoid the socket"; figures in docs/performance.md). aclrtMallocHost blocks
// are sealed memfds acld maps too, so a copy from or to one costs one memcpy
// in the daemon and may run asynchronously. Pageable memory of a synchronous
// copy passes through a staging segment in chunks, so that the client's and
// the daemon's memcpy overlap; small copies ride inline.
#ifndef ACLD_CLIENT_BULK_COPIES_H_
#define ACLD_CLIENT_BULK_COPIES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/host_blocks.h"
#include "client/session_channel.h"
#include "client/transport.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acl_client {

class BulkCopies {
 public:
  // Shared memory is handed to acld on the identity socket beside
  // `socket_path`, waiting at most `peer_timeout`; requests go on `channel`.
  BulkCopies(std::string socket_path, SessionChannel* channel, absl::Duration peer_timeout);

  BulkCopies(const BulkCopies&) = delete;
  BulkCopies& operator=(const BulkCopies&) = delete;

  absl::Status Copy(const HostCopy& copy);
  absl::StatusOr<uint64_t> CopyAsync(uint64_t stream, uint64_t thread, const HostCopy& copy);
  absl::StatusOr<uint64_t> LoadBinary(int32_t device_id, absl::string_view binary);
  absl::StatusOr<void*> MallocHost(uint64_t size);
  absl::Status FreeHost(void* pointer);
  bool IsHostMemory(const void* pointer, uint64_t count) const {
    return host_blocks_.Find(pointer, count).has_value();
  }

 private:
  struct Segment {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    uint64_t id = 0;
  };

  // A shared memory segment registered with acld; `staging`: the session's
  // staging area, which acld reserves room for beside the segment caps.
  absl::StatusOr<Segment> CreateSegment(uint64_t size, bool staging);
  void DestroySegment(const Segment& segment);
  absl::Status EnsureStaging() ABSL_EXCLUSIVE_LOCKS_REQUIRED(staging_mu_);
  absl::Status StagedCopyToDevice(const HostCopy& copy);
  absl::Status StagedCopyToHost(const HostCopy& copy);
  // Sends the chunk of `copy` at `offset` that sits in staging slot `slot`.
  std::shared_ptr<SessionChannel::PendingCall> StartStagedChunk(const HostCopy& copy,
                                                                uint64_t offset, uint64_t bytes,
                                                                uint64_t slot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(staging_mu_);
  // The host side of `copy` as a shared memory reference, when it has one.
  bool SetSharedHost(const HostCopy& copy, acl::v1::CopyRequest& proto) const;

  const std::string socket_path_;
  SessionChannel* const channel_;
  const absl::Duration peer_timeout_;

  HostBlocks host_blocks_;  // aclrtMallocHost blocks; tag = segment id
  absl::Mutex staging_mu_;  // one staged bulk copy at a time
  Segment staging_ ABSL_GUARDED_BY(staging_mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_BULK_COPIES_H_
