#include "client/error_state.h"

#include <string>
#include <thread>

#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acl_client {
namespace {

TEST(ErrorStateTest, SuccessLeavesNoMessage) {
  EXPECT_EQ(ReportStatus(absl::OkStatus()), ACL_SUCCESS);
  EXPECT_EQ(TakeRecentErrorMessage(), nullptr);
}

TEST(ErrorStateTest, MessageIsTakenOnce) {
  EXPECT_EQ(ReportStatus(acld::AclStatus(ACL_ERROR_INVALID_FILE, "no such file: x.json")),
            ACL_ERROR_INVALID_FILE);
  const char* message = TakeRecentErrorMessage();
  ASSERT_NE(message, nullptr);
  EXPECT_NE(std::string(message).find("no such file: x.json"), std::string::npos);
  EXPECT_NE(std::string(message).find("100003"), std::string::npos);
  EXPECT_EQ(TakeRecentErrorMessage(), nullptr);
}

TEST(ErrorStateTest, ThreadLevelMessagesStayOnTheirThread) {
  SetProcessLevelErrorMessages(false);
  std::thread([] {
    ReportStatus(acld::AclStatus(ACL_ERROR_INVALID_PARAM, "other thread"));
  }).join();
  EXPECT_EQ(TakeRecentErrorMessage(), nullptr);
}

TEST(ErrorStateTest, ProcessLevelMessagesAreSharedAcrossThreads) {
  SetProcessLevelErrorMessages(true);
  std::thread([] {
    ReportStatus(acld::AclStatus(ACL_ERROR_INVALID_PARAM, "other thread"));
  }).join();
  const char* message = TakeRecentErrorMessage();
  ASSERT_NE(message, nullptr);
  EXPECT_NE(std::string(message).find("other thread"), std::string::npos);
  SetProcessLevelErrorMessages(false);
}

}  // namespace
}  // namespace acl_client
