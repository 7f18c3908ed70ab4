#include "daemon/server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// As libascendcl seals its memory (client/sealed_memfd.h); it also allocates it.
constexpr int kSealed = F_SEAL_SHRINK | F_SEAL_GROW;

// A memfd as the client library makes one: `file_bytes` long with `seals`,
// handed over as `size` bytes.
// `allocated`: its pages allocated, as libascendcl's are.
ReceivedMemory MakeMemory(uint64_t file_bytes, int seals = kSealed, uint64_t size = 0,
                          bool allocated = true) {
  const int fd = memfd_create("registry-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(file_bytes)), 0);
  if (allocated) {  // every page written, as libascendcl does
    const std::string zeros(file_bytes, '\0');
    EXPECT_EQ(pwrite(fd, zeros.data(), zeros.size(), 0), static_cast<ssize_t>(zeros.size()));
  }
  if (seals != 0) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, seals), 0);
  }
  return ReceivedMemory{UniqueFd(fd), size == 0 ? file_bytes : size};
}

TEST(SharedMemoryTest, RegisteredSegmentsResolveWithinBounds) {
  SharedMemoryRegistry registry;
  absl::StatusOr<uint64_t> segment = registry.Register(MakeMemory(8192));
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(registry.mapped_bytes(), 8192u);
  EXPECT_EQ(registry.segment_count(), 1u);
  absl::StatusOr<HostSpan> span = registry.Resolve(*segment, 4096, 4096);
  ASSERT_TRUE(span.ok());
  span->data[4095] = 1;  // mapped and writable
  EXPECT_FALSE(span->read_next) << "not a staging area: nothing says the host reads it next";
  EXPECT_FALSE(registry.Resolve(*segment, 4096, 4097).ok());
  EXPECT_FALSE(registry.Resolve(*segment, 8193, 0).ok());
  EXPECT_FALSE(registry.Resolve(*segment, ~0ull, 2).ok());
  EXPECT_FALSE(registry.Resolve(*segment + 1, 0, 1).ok());
  ASSERT_TRUE(registry.Unregister(*segment).ok());
  EXPECT_FALSE(registry.Unregister(*segment).ok());
  EXPECT_FALSE(registry.Resolve(*segment, 0, 1).ok());
  span->data[0] = 2;  // a span outlives its segment's registration
  // ... and still counts, until it goes.
  EXPECT_EQ(registry.mapped_bytes(), 8192u);
  EXPECT_EQ(registry.segment_count(), 1u);
  *span = HostSpan{};
  EXPECT_EQ(registry.mapped_bytes(), 0u);
  EXPECT_EQ(registry.segment_count(), 0u);
}

TEST(SharedMemoryTest, MappingsAreRegisteredWithTheDevicesUntilTheLastCopyEnds) {
  int registered = 0;
  void* registered_at = nullptr;
  uint64_t registered_bytes = 0;
  SharedMemoryRegistry registry({}, [&](void* data, uint64_t bytes) {
    ++registered;
    registered_at = data;
    registered_bytes = bytes;
    return std::shared_ptr<void>(data, [&registered](void*) { --registered; });
  });
  absl::StatusOr<uint64_t> segment = registry.Register(MakeMemory(8192));
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(registered, 1);
  EXPECT_EQ(registered_bytes, 8192u);
  absl::StatusOr<HostSpan> span = registry.Resolve(*segment, 0, 1);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->data, registered_at);
  ASSERT_TRUE(registry.Unregister(*segment).ok());
  EXPECT_EQ(registered, 1) << "unregistered while a copy still uses the mapping";
  *span = HostSpan{};
  EXPECT_EQ(registered, 0);
}

// acld never allocates a page of a client's memory (its own memory cgroup
// would pay for it for as long as the client keeps the file): memory with a
// hole is refused, and once mapped none can be punched into it. Memory an
// older libascendcl sealed for good (F_SEAL_SEAL) cannot be so sealed: its
// holes are filled from the client's own mapping, or the operator accepts it.
TEST(SharedMemoryTest, MemoryHasNoHolesNorCanGetAnyOnceMapped) {
  SharedMemoryRegistry registry;
  const int holes = memfd_create("registry-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(holes, 0);
  ASSERT_EQ(ftruncate(holes, 3 * 4096), 0);
  ASSERT_EQ(pwrite(holes, "x", 1, 0), 1);  // one page of three
  ASSERT_EQ(fcntl(holes, F_ADD_SEALS, kSealed), 0);
  absl::StatusOr<uint64_t> refused = registry.Register(ReceivedMemory{UniqueFd(holes), 3 * 4096});
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(refused.status().message().find("written"), std::string::npos) << refused.status();
  // Pages allocated beyond the end of the file (fallocate's KEEP_SIZE), or
  // allocated and never written, leave holes where acld maps.
  const int beyond = memfd_create("registry-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(beyond, 0);
  ASSERT_EQ(ftruncate(beyond, 2 * 4096), 0);
  ASSERT_EQ(fallocate(beyond, FALLOC_FL_KEEP_SIZE, 2 * 4096, 2 * 4096), 0);
  ASSERT_EQ(fcntl(beyond, F_ADD_SEALS, kSealed), 0);
  EXPECT_FALSE(registry.Register(ReceivedMemory{UniqueFd(beyond), 2 * 4096}).ok());
  const int unwritten = memfd_create("registry-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(unwritten, 0);
  ASSERT_EQ(ftruncate(unwritten, 2 * 4096), 0);
  ASSERT_EQ(fallocate(unwritten, 0, 0, 2 * 4096), 0);
  ASSERT_EQ(fcntl(unwritten, F_ADD_SEALS, kSealed), 0);
  EXPECT_FALSE(registry.Register(ReceivedMemory{UniqueFd(unwritten), 2 * 4096}).ok());
  EXPECT_EQ(registry.segment_count(), 0u);

  ReceivedMemory memory = MakeMemory(2 * 4096);
  const int client_fd = dup(memory.fd.get());
  ASSERT_GE(client_fd, 0);
  auto* client_view = static_cast<uint8_t*>(
      mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, client_fd, 0));
  ASSERT_NE(client_view, MAP_FAILED);
  absl::StatusOr<uint64_t> segment = registry.Register(std::move(memory));
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_NE(fallocate(client_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(madvise(client_view, 4096, MADV_REMOVE), 0);
  client_view[5] = 7;  // the client's mapping stays writable
  absl::StatusOr<HostSpan> span = registry.Resolve(*segment, 0, 8);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->data[5], 7);
  munmap(client_view, 2 * 4096);
  close(client_fd);

  // No process that maps it to fill its holes from (client_page_filler_test.cc
  // has one; tests/shared_memory_attack_test.cc a whole client).
  absl::StatusOr<uint64_t> unfillable = registry.Register(MakeMemory(4096, kSealed | F_SEAL_SEAL));
  EXPECT_EQ(AclCodeOf(unfillable.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(unfillable.status().message().find("fill its holes"), std::string::npos)
      << unfillable.status();
  SetAcceptsUnsealableMemory(true);
  absl::StatusOr<uint64_t> accepted = registry.Register(MakeMemory(4096, kSealed | F_SEAL_SEAL));
  SetAcceptsUnsealableMemory(false);
  EXPECT_TRUE(accepted.ok()) << accepted.status();
}

TEST(SharedMemoryTest, OnlySealedMemoryOfTheAnnouncedSize) {
  SharedMemoryRegistry registry;
  // Unsealed: the client could truncate it under the mapping (SIGBUS).
  EXPECT_EQ(AclCodeOf(registry.Register(MakeMemory(4096, 0)).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(registry.Register(MakeMemory(4096, F_SEAL_SEAL)).status()),
            ACL_ERROR_INVALID_PARAM);
  // Smaller than announced.
  EXPECT_EQ(AclCodeOf(registry.Register(MakeMemory(4096, kSealed, 8192)).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(registry.Register(ReceivedMemory{UniqueFd(), 4096}).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(registry.segment_count(), 0u);
  // A larger file is fine: exactly the announced size is mapped.
  absl::StatusOr<uint64_t> segment = registry.Register(MakeMemory(8192, kSealed, 4096));
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(registry.mapped_bytes(), 4096u);
  EXPECT_FALSE(registry.Resolve(*segment, 0, 4097).ok());
}

TEST(SharedMemoryTest, BytesAreLimitedPerSession) {
  SharedMemoryRegistry registry(SharedMemoryLimits{3 * 4096, 100});
  ASSERT_TRUE(registry.Register(MakeMemory(2 * 4096)).ok());
  absl::StatusOr<uint64_t> refused = registry.Register(MakeMemory(2 * 4096));
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.status().message().find("--max_host_memory_per_session"), std::string::npos)
      << refused.status();
  ASSERT_TRUE(registry.Register(MakeMemory(4096)).ok());
  EXPECT_EQ(registry.mapped_bytes(), 3u * 4096);
}

TEST(SharedMemoryTest, SparseHugeSegmentsAreRefusedByTheByteLimit) {
  // 1 TiB that costs the client nothing (sparse) would cost acld address space.
  SharedMemoryRegistry registry;
  absl::StatusOr<uint64_t> refused = registry.Register(
      MakeMemory(uint64_t{1} << 40, kSealed, 0, /*allocated=*/false));
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_MEMORY_ALLOCATION) << refused.status();
  EXPECT_EQ(registry.mapped_bytes(), 0u);
}

TEST(SharedMemoryTest, SegmentsAreLimitedPerSession) {
  SharedMemoryRegistry registry(SharedMemoryLimits{1ull << 30, 2});
  absl::StatusOr<uint64_t> first = registry.Register(MakeMemory(4096));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(registry.Register(MakeMemory(4096)).ok());
  absl::StatusOr<uint64_t> refused = registry.Register(MakeMemory(4096));
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.status().message().find("at most 2"), std::string::npos) << refused.status();
  ASSERT_TRUE(registry.Unregister(*first).ok());
  EXPECT_TRUE(registry.Register(MakeMemory(4096)).ok());
}

// The sessions of one uid share a segment limit, and all sessions one for the
// host: acld's mappings are bounded by vm.max_map_count, and if they reached
// it acld could map nothing for anyone. A segment's place goes back when its
// mapping goes (after the copies that use it), even after the session.
TEST(SharedMemoryTest, SegmentsAreLimitedPerUidAndForTheHost) {
  auto shared = std::make_shared<SegmentBudget>(/*per_tenant=*/3, /*total=*/4);
  auto limits = [&](uint32_t uid) {
    return SharedMemoryLimits{1ull << 30, 100, shared, Tenant(uid, nullptr)};
  };
  SharedMemoryRegistry first(limits(1000)), second(limits(1000)), other(limits(1001));
  const uint64_t segment = *first.Register(MakeMemory(4096));
  ASSERT_TRUE(first.Register(MakeMemory(4096)).ok());
  ASSERT_TRUE(second.Register(MakeMemory(4096)).ok());
  absl::Status refused = second.Register(MakeMemory(4096)).status();
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.message().find("--max_host_segments_per_uid"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("uid 1000"), std::string::npos) << refused;
  ASSERT_TRUE(other.Register(MakeMemory(4096)).ok());  // its own count
  refused = other.Register(MakeMemory(4096)).status();  // but the host's is full
  EXPECT_NE(refused.message().find("--max_host_segments)"), std::string::npos) << refused;
  EXPECT_EQ(shared->total(), 4u);
  EXPECT_EQ(shared->ByTenant()[Tenant(1000, nullptr)], 3u);
  absl::StatusOr<HostSpan> span = first.Resolve(segment, 0, 1);  // a copy in flight
  ASSERT_TRUE(span.ok());
  ASSERT_TRUE(first.Unregister(segment).ok());
  EXPECT_FALSE(second.Register(MakeMemory(4096)).ok()) << "still mapped for the copy";
  *span = HostSpan{};
  EXPECT_TRUE(second.Register(MakeMemory(4096)).ok());
  EXPECT_EQ(shared->total(), 4u);
}

// Tenants at their caps must not stop everyone else's pageable copies: a
// session's one staging segment counts but is never refused by the shared
// caps (one per session, as its channel). A second one is an ordinary
// segment, and the reservation comes back when the first is unmapped.
TEST(SharedMemoryTest, ASessionsStagingSegmentIsReservedBesideTheSharedCaps) {
  auto shared = std::make_shared<SegmentBudget>(/*per_tenant=*/1, /*total=*/1);
  SharedMemoryRegistry full(SharedMemoryLimits{1ull << 30, 100, shared, Tenant(1000, nullptr)});
  SharedMemoryRegistry other(SharedMemoryLimits{1ull << 30, 100, shared, Tenant(1001, nullptr)});
  ASSERT_TRUE(full.Register(MakeMemory(4096)).ok());
  EXPECT_FALSE(other.Register(MakeMemory(4096)).ok()) << "the host's count is full";
  absl::StatusOr<uint64_t> staging = other.Register(MakeMemory(4096), /*staging=*/true);
  ASSERT_TRUE(staging.ok()) << staging.status();
  EXPECT_EQ(shared->total(), 2u) << "a reserved segment still counts";
  absl::Status refused = other.Register(MakeMemory(4096), /*staging=*/true).status();
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION) << "one reservation per session";
  absl::StatusOr<uint64_t> full_staging = full.Register(MakeMemory(4096), /*staging=*/true);
  EXPECT_TRUE(full_staging.ok()) << "every session has one: " << full_staging.status();
  // A staging segment's bytes are read as soon as a copy lands in them: the
  // sim keeps them in the caches (hal::Transfer::host_reads_next).
  EXPECT_TRUE(other.Resolve(*staging, 0, 4096)->read_next);
  ASSERT_TRUE(other.Unregister(*staging).ok());
  EXPECT_TRUE(other.Register(MakeMemory(4096), /*staging=*/true).ok()) << "given back on unmap";
  EXPECT_EQ(other.segment_count(), 1u);
}

TEST(SharedMemoryTest, InFlightCopiesCannotPileUpMappings) {
  SharedMemoryRegistry registry(SharedMemoryLimits{2 * 4096, 100});
  absl::StatusOr<uint64_t> segment = registry.Register(MakeMemory(2 * 4096));
  ASSERT_TRUE(segment.ok());
  absl::StatusOr<HostSpan> span = registry.Resolve(*segment, 0, 1);  // a copy in flight
  ASSERT_TRUE(span.ok());
  ASSERT_TRUE(registry.Unregister(*segment).ok());
  EXPECT_EQ(AclCodeOf(registry.Register(MakeMemory(4096)).status()),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  *span = HostSpan{};  // the copy ends
  EXPECT_TRUE(registry.Register(MakeMemory(4096)).ok());
}

TEST(SharedMemoryTest, MappingsOutliveTheSessionWhileCopiesUseThem) {
  HostSpan span;
  {
    SharedMemoryRegistry registry;
    absl::StatusOr<uint64_t> segment = registry.Register(MakeMemory(4096));
    ASSERT_TRUE(segment.ok());
    absl::StatusOr<HostSpan> resolved = registry.Resolve(*segment, 0, 4096);
    ASSERT_TRUE(resolved.ok());
    span = *std::move(resolved);
  }
  std::memset(span.data, 7, 4096);  // still mapped
}

}  // namespace
}  // namespace acld::server
