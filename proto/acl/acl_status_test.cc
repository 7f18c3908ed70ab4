#include "proto/acl/acl_status.h"

#include "gtest/gtest.h"

namespace acld {
namespace {

TEST(AclStatusTest, CarriesTheExactCodeAndMessage) {
  absl::Status status = AclStatus(100003, "no such file");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(AclCodeOf(status), 100003);
  EXPECT_EQ(status.message(), "no such file");
}

TEST(AclStatusTest, OkIsZero) { EXPECT_EQ(AclCodeOf(absl::OkStatus()), 0); }

TEST(AclStatusTest, ForeignStatusIsAnInternalError) {
  EXPECT_EQ(AclCodeOf(absl::UnknownError("boom")), 500000);
}

TEST(AclStatusTest, ZeroCodeNeverMeansSuccess) {
  absl::Status status = AclStatus(0, "bug");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(AclCodeOf(status), 500000);
}

TEST(AclStatusTest, SocketCloseMapsToUnavailable) {
  EXPECT_EQ(AclStatus(507901, "gone").code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace acld
