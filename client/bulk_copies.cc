#include "client/bulk_copies.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/peer_token.h"
#include "client/sealed_memfd.h"
#include "client/session_codec.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"
#include "proto/acl/streaming_copy.h"

namespace acl_client {
namespace {

using acl::v1::ClientMessage;
using Direction = acld::CopyDirection;
using PendingCall = SessionChannel::PendingCall;

// Copies up to this size travel inside the message; larger ones use shared memory.
constexpr uint64_t kInlineBytes = 64 << 10;
// A synchronous pageable copy moves through the session's staging segment
// in chunks, so that the client's and the daemon's copies overlap, a round
// trip per chunk. Chunks of at most 512 KiB in eight slots (a 4 MiB segment)
// keep each chunk in the CPUs' caches between the writer's copy and the
// reader's: on this VM 82-105 % of memcpy at 256 MiB, where four slots of
// 4 MiB, which leave the caches, measured 40-59 % (docs/performance.md,
// "Pageable copies in cache-sized chunks").
constexpr uint64_t kChunkBytes = 512 << 10;
constexpr uint64_t kStagingSlots = 8;
constexpr uint64_t kStagingBytes = kChunkBytes * kStagingSlots;
// Copies of up to 2 MiB go in chunks of 256 KiB, so that even a small one
// overlaps its two sides (a 4 MiB copy in one chunk was the client's copy,
// then the daemon's); smaller chunks cost more round trips than they save
// (docs/performance.md, "Copies of 1 to 16 MiB in smaller chunks").
constexpr uint64_t kSmallChunkBytes = 256 << 10;
// An asynchronous copy from pageable memory takes its bytes at once, in
// chunks that ride the batch inside its messages: a full batch plus one more
// chunk must still be a message acld accepts.
constexpr uint64_t kAsyncChunkBytes = 4 << 20;
static_assert(SessionChannel::kMaxBatchBytes + kAsyncChunkBytes < acld::kMaxRequestBytes,
              "a batch of inline chunks must fit a request");
// A device-to-host copy's destination up to this size most likely stays in
// the caches and is read from them next, so its chunks are stored there (as
// acld stores its own copies into host memory up to 16 MiB); half of acld's
// bound, since the staging slots share the caches with it. Measured in
// docs/performance.md, session 27: 8 MiB pageable copies 72-77 % of memcpy
// with stores that skip the caches, 87-89 % with these; 16 MiB fell.
constexpr uint64_t kCachedDestinationMaxBytes = 8 << 20;

uint64_t ChunkBytesFor(uint64_t count) {
  return count > 8 * kSmallChunkBytes ? kChunkBytes : kSmallChunkBytes;
}

// A reply carries at most this much of a device-to-host copy into pageable memory.
constexpr uint64_t kReplyChunkBytes = acld::kMaxReplyCopyBytes;

// The device side of `count` bytes of `copy`, `offset` bytes into it.
acl::v1::CopyRequest RangeOf(const HostCopy& copy, uint64_t offset, uint64_t count) {
  return codec::CopyRange(copy.direction, copy.device_dst, copy.device_src, offset, count);
}

}  // namespace

BulkCopies::BulkCopies(std::string socket_path, SessionChannel* channel,
                       absl::Duration peer_timeout)
    : socket_path_(std::move(socket_path)), channel_(channel), peer_timeout_(peer_timeout) {}

absl::StatusOr<uint64_t> BulkCopies::LoadBinary(int32_t device_id, absl::string_view binary) {
  if (binary.size() <= kInlineBytes) {
    return codec::HandleOf(channel_->Call(codec::LoadBinaryInline(device_id, binary)));
  }
  // A large binary goes through shared memory of its own, gone after the call.
  ACL_ASSIGN_OR_RETURN(void* shared, MallocHost(binary.size()));
  std::memcpy(shared, binary.data(), binary.size());
  std::optional<HostBlocks::Location> location = host_blocks_.Find(shared, binary.size());
  absl::StatusOr<uint64_t> handle = codec::HandleOf(channel_->Call(
      codec::LoadBinaryShared(device_id, binary.size(), location->tag, location->offset)));
  absl::Status freed = FreeHost(shared);
  if (handle.ok() && !freed.ok()) return freed;
  return handle;
}

bool BulkCopies::SetSharedHost(const HostCopy& copy, acl::v1::CopyRequest& proto) const {
  const void* host = copy.direction == Direction::kHostToDevice ? copy.host_src : copy.host_dst;
  std::optional<HostBlocks::Location> location = host_blocks_.Find(host, copy.count);
  if (!location.has_value()) return false;
  codec::SetShared(location->tag, location->offset, proto);
  return true;
}

absl::Status BulkCopies::Copy(const HostCopy& copy) {
  acl::v1::CopyRequest whole = RangeOf(copy, 0, copy.count);
  if (copy.direction == Direction::kDeviceToDevice || SetSharedHost(copy, whole)) {
    return channel_->Call(codec::Copy(std::move(whole))).status();
  }
  if (copy.count > kInlineBytes) {
    return copy.direction == Direction::kHostToDevice ? StagedCopyToDevice(copy)
                                                      : StagedCopyToHost(copy);
  }
  if (copy.direction == Direction::kHostToDevice) {
    whole.set_inline_data(copy.host_src, copy.count);
    return channel_->Call(codec::Copy(std::move(whole))).status();
  }
  ACL_ASSIGN_OR_RETURN(std::string bytes,
                       codec::CopiedBytesOf(channel_->Call(codec::Copy(std::move(whole)))));
  std::memcpy(copy.host_dst, bytes.data(), std::min<size_t>(bytes.size(), copy.count));
  return absl::OkStatus();
}

std::shared_ptr<PendingCall> BulkCopies::StartStagedChunk(const HostCopy& copy, uint64_t offset,
                                                          uint64_t bytes, uint64_t slot) {
  acl::v1::CopyRequest chunk = RangeOf(copy, offset, bytes);
  codec::SetShared(staging_.id, slot * kChunkBytes, chunk);
  return channel_->Start(codec::Copy(std::move(chunk)));
}

absl::Status BulkCopies::StagedCopyToDevice(const HostCopy& copy) {
  absl::MutexLock lock(&staging_mu_);
  absl::Status ready = EnsureStaging();
  if (!ready.ok()) return ready;
  std::vector<std::shared_ptr<PendingCall>> in_flight(kStagingSlots);
  absl::Status result;
  auto finish = [&](std::shared_ptr<PendingCall>& call) {
    if (call == nullptr) return;
    absl::Status status = channel_->Finish(call).status();
    if (result.ok()) result = status;
    call = nullptr;
  };
  const auto* source = static_cast<const uint8_t*>(copy.host_src);
  const uint64_t chunk_bytes = ChunkBytesFor(copy.count);
  for (uint64_t offset = 0, chunk = 0; offset < copy.count; offset += chunk_bytes, ++chunk) {
    const uint64_t slot = chunk % kStagingSlots;
    finish(in_flight[slot]);  // the slot is free once the daemon copied out of it
    const uint64_t bytes = std::min(chunk_bytes, copy.count - offset);
    acld::CopyForTheReader(staging_.base + slot * kChunkBytes, source + offset, bytes);
    in_flight[slot] = StartStagedChunk(copy, offset, bytes, slot);
  }
  for (auto& call : in_flight) finish(call);
  return result;
}

absl::Status BulkCopies::StagedCopyToHost(const HostCopy& copy) {
  absl::MutexLock lock(&staging_mu_);
  absl::Status ready = EnsureStaging();
  if (!ready.ok()) return ready;
  struct Chunk {
    std::shared_ptr<PendingCall> call;
    uint64_t offset, bytes, slot;
  };
  std::deque<Chunk> in_flight;
  absl::Status result;
  auto deliver = [&] {
    Chunk chunk = std::move(in_flight.front());
    in_flight.pop_front();
    absl::Status status = channel_->Finish(chunk.call).status();
    if (status.ok()) {
      uint8_t* dst = static_cast<uint8_t*>(copy.host_dst) + chunk.offset;
      const uint8_t* src = staging_.base + chunk.slot * kChunkBytes;
      if (copy.count <= kCachedDestinationMaxBytes) {
        acld::CopyForTheReader(dst, src, chunk.bytes);
      } else {
        // The far end of a large copy: stores that skip the caches keep the
        // staging segment in them (proto/acl/streaming_copy.h).
        acld::StreamingCopy(dst, src, chunk.bytes);
      }
    } else if (result.ok()) {
      result = status;
    }
  };
  const uint64_t chunk_bytes = ChunkBytesFor(copy.count);
  for (uint64_t offset = 0, chunk = 0; offset < copy.count; offset += chunk_bytes, ++chunk) {
    if (in_flight.size() == kStagingSlots) deliver();
    const uint64_t slot = chunk % kStagingSlots;
    const uint64_t bytes = std::min(chunk_bytes, copy.count - offset);
    in_flight.push_back({StartStagedChunk(copy, offset, bytes, slot), offset, bytes, slot});
  }
  while (!in_flight.empty()) deliver();
  return result;
}

absl::StatusOr<uint64_t> BulkCopies::CopyAsync(uint64_t stream, uint64_t thread,
                                               const HostCopy& copy) {
  acl::v1::CopyRequest whole = RangeOf(copy, 0, copy.count);
  if (copy.direction == Direction::kDeviceToDevice || SetSharedHost(copy, whole)) {
    return channel_->Submit(codec::CopyAsync(stream, thread, std::move(whole)));
  }
  if (copy.direction == Direction::kHostToDevice) {
    // Pageable source: its bytes are taken now, in chunks that ride the batch.
    const auto* source = static_cast<const uint8_t*>(copy.host_src);
    uint64_t task_id = 0;
    for (uint64_t offset = 0; offset < copy.count || offset == 0; offset += kAsyncChunkBytes) {
      const uint64_t bytes = std::min(kAsyncChunkBytes, copy.count - offset);
      acl::v1::CopyRequest chunk = RangeOf(copy, offset, bytes);
      chunk.set_inline_data(source + offset, bytes);
      task_id = channel_->Submit(codec::CopyAsync(stream, thread, std::move(chunk)), bytes);
      if (copy.count == 0) break;
    }
    return task_id;
  }
  // Pageable destination: the daemon cannot write it, so wait until the stream
  // reaches the copy and take the bytes from the reply.
  uint64_t task_id = 0;
  for (uint64_t offset = 0; offset < copy.count; offset += kReplyChunkBytes) {
    const uint64_t bytes = std::min(kReplyChunkBytes, copy.count - offset);
    ClientMessage request = codec::CopyToClient(stream, thread, RangeOf(copy, offset, bytes));
    task_id = channel_->TakeTaskId(stream);
    ACL_ASSIGN_OR_RETURN(std::string data,
                         codec::CopiedBytesOf(channel_->Call(std::move(request))));
    if (data.size() == bytes) {
      std::memcpy(static_cast<uint8_t*>(copy.host_dst) + offset, data.data(), bytes);
    }
  }
  return task_id;
}

// --- shared memory ---

absl::StatusOr<BulkCopies::Segment> BulkCopies::CreateSegment(uint64_t size, bool staging) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size = (std::max<uint64_t>(size, 1) + page - 1) / page * page;
  auto failed = [size](absl::string_view why) {
    return acld::AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                           absl::StrCat("cannot create ", size, " bytes of shared memory: ", why));
  };
  absl::StatusOr<SealedMemfd> memory = CreateSealedMemfd("acld-host", size);
  if (!memory.ok()) return failed(memory.status().message());
  const int fd = memory->fd;
  void* base = memory->base;
  // acld keeps its own reference; the mapping keeps this process's.
  absl::StatusOr<std::string> ticket =
      SendSharedMemory(acld::PeerSocketPath(socket_path_), fd, size, peer_timeout_);
  close(fd);
  if (!ticket.ok()) {
    munmap(base, size);
    return failed(ticket.status().message());
  }
  absl::StatusOr<uint64_t> id =
      codec::HandleOf(channel_->Call(codec::RegisterSharedMemory(*ticket, size, staging)));
  if (!id.ok()) {
    munmap(base, size);
    return id.status();
  }
  return Segment{static_cast<uint8_t*>(base), size, *id};
}

void BulkCopies::DestroySegment(const Segment& segment) {
  channel_->Call(codec::UnregisterSharedMemory(segment.id)).status().IgnoreError();
  munmap(segment.base, segment.size);
}

absl::Status BulkCopies::EnsureStaging() {
  if (staging_.base != nullptr) return absl::OkStatus();
  absl::StatusOr<Segment> segment = CreateSegment(kStagingBytes, /*staging=*/true);
  if (!segment.ok()) return segment.status();
  staging_ = *segment;
  return absl::OkStatus();
}

absl::StatusOr<void*> BulkCopies::MallocHost(uint64_t size) {
  absl::StatusOr<Segment> segment = CreateSegment(size, /*staging=*/false);
  if (!segment.ok()) return segment.status();
  host_blocks_.Add(segment->base, {segment->size, segment->id});
  return static_cast<void*>(segment->base);
}

absl::Status BulkCopies::FreeHost(void* pointer) {
  std::optional<HostBlocks::Block> block = host_blocks_.Remove(pointer);
  if (!block.has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "aclrtFreeHost: the pointer was not returned by aclrtMallocHost");
  }
  DestroySegment(Segment{static_cast<uint8_t*>(pointer), block->size, block->tag});
  return absl::OkStatus();
}

}  // namespace acl_client
