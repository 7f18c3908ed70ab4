#include "tools/aclctl/json_printer.h"

#include "gtest/gtest.h"
#include "proto/acl/v1/admin.pb.h"
#include "tools/aclctl/table.h"

namespace aclctl {
namespace {

TEST(JsonPrinterTest, PrintsEveryFieldWithNumbersAsNumbers) {
  acl::v1::StatusReply status;
  status.set_version("0.1.0");
  status.set_host_refcount(3);
  acl::v1::SessionInfo* session = status.add_sessions();
  session->set_id(12345678901ull);
  session->set_pid(42);
  session->set_command("app \"quoted\"\n");
  (*session->mutable_device_refs())[1] = 2;
  (*session->mutable_config())["err_msg_mode"] = "1";
  const std::string json = ToJson(status);
  EXPECT_NE(json.find("\"host_refcount\":3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"id\":12345678901"), std::string::npos) << json;
  EXPECT_NE(json.find("\"pid\":42"), std::string::npos) << json;
  EXPECT_NE(json.find("\"command\":\"app \\\"quoted\\\"\\n\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"device_refs\":{\"1\":2}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"config\":{\"err_msg_mode\":\"1\"}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"devices\":[]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"uptime_seconds\":0"), std::string::npos) << json;
}

TEST(TableTest, AlignsColumns) {
  Table table({"A", "BB"});
  table.AddRow({"long", "x"});
  EXPECT_EQ(table.Render(), "A     BB\nlong  x\n");
}

TEST(TableTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(4ull << 30), "4.0 GiB");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
}

}  // namespace
}  // namespace aclctl
