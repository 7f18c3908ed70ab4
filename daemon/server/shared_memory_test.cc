#include "daemon/server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// A shared memory object as the client library makes one.
std::string MakeObject(uint64_t size) {
  const std::string name = "/acld-test-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  close(fd);
  return name;
}

TEST(SharedMemoryTest, RegisteredSegmentsResolveWithinBounds) {
  SharedMemoryRegistry registry;
  const std::string name = MakeObject(8192);
  absl::StatusOr<uint64_t> segment = registry.Register(name, 8192, getuid());
  shm_unlink(name.c_str());
  ASSERT_TRUE(segment.ok()) << segment.status();
  EXPECT_EQ(registry.mapped_bytes(), 8192u);
  absl::StatusOr<HostSpan> span = registry.Resolve(*segment, 4096, 4096);
  ASSERT_TRUE(span.ok());
  span->data[4095] = 1;  // mapped and writable
  EXPECT_FALSE(registry.Resolve(*segment, 4096, 4097).ok());
  EXPECT_FALSE(registry.Resolve(*segment, 8193, 0).ok());
  EXPECT_FALSE(registry.Resolve(*segment, ~0ull, 2).ok());
  EXPECT_FALSE(registry.Resolve(*segment + 1, 0, 1).ok());
  ASSERT_TRUE(registry.Unregister(*segment).ok());
  EXPECT_FALSE(registry.Unregister(*segment).ok());
  span->data[0] = 2;  // a span outlives its segment's registration
  EXPECT_EQ(registry.mapped_bytes(), 0u);
}

TEST(SharedMemoryTest, OnlyTheLibrarysObjectsOfTheRightSize) {
  SharedMemoryRegistry registry;
  EXPECT_EQ(AclCodeOf(registry.Register("/etc-passwd", 4096, getuid()).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(registry.Register("/acld-x/../y", 4096, getuid()).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(registry.Register("/acld-missing", 4096, getuid()).status()),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  const std::string name = MakeObject(4096);
  EXPECT_EQ(AclCodeOf(registry.Register(name, 8192, getuid()).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(registry.Register(name, 0, getuid()).status()), ACL_ERROR_INVALID_PARAM);
  // Another user's object is refused even when its name is known.
  EXPECT_EQ(AclCodeOf(registry.Register(name, 4096, getuid() + 1).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace acld::server
