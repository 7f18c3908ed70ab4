#include "client/thread_id.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace acl_client {
namespace {

uint64_t KernelThreadId() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

TEST(ThreadIdTest, EachThreadGetsItsOwnKernelThreadId) {
  EXPECT_EQ(CurrentThreadId(), KernelThreadId());
  EXPECT_EQ(CurrentThreadId(), KernelThreadId());  // asked again: from the cache
  uint64_t other = 0;
  uint64_t other_kernel = 0;
  std::thread([&] {
    other = CurrentThreadId();
    other_kernel = KernelThreadId();
  }).join();
  EXPECT_EQ(other, other_kernel);
  EXPECT_NE(other, CurrentThreadId());
}

TEST(ThreadIdTest, AForkedChildSeesItsOwnIdNotItsParentsCachedOne) {
  const uint64_t parent = CurrentThreadId();  // cached before the fork
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uint64_t mine = CurrentThreadId();
    _exit(mine == KernelThreadId() && mine != parent ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(CurrentThreadId(), parent);  // the parent's cache stays right
}

}  // namespace
}  // namespace acl_client
