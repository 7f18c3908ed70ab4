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

TEST(TableTest, UseBesideLimit) {
  EXPECT_EQ(CountOfLimit(3, 4096), "3/4096");
  EXPECT_EQ(CountOfLimit(3, 4096, 1), "3+1/4096");
  EXPECT_EQ(CountOfLimit(0, 0), "0/none");
  EXPECT_EQ(BytesOfLimit(4096, 0), "4.0 KiB/none");
  EXPECT_EQ(BytesOfLimit(512, 1 << 20), "512 B/1.0 MiB");
}

TEST(JsonPrinterTest, NewSessionFieldsAreNumbers) {
  acl::v1::SessionInfo session;
  session.set_queued_bytes(1ull << 40);
  session.set_max_host_memory_bytes(16ull << 30);
  session.set_weight(7);
  const std::string json = ToJson(session);
  EXPECT_NE(json.find("\"queued_bytes\":1099511627776"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_host_memory_bytes\":17179869184"), std::string::npos) << json;
  EXPECT_NE(json.find("\"weight\":7"), std::string::npos) << json;
  EXPECT_NE(json.find("\"closing_streams\":0"), std::string::npos) << json;
}

TEST(TableTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(4ull << 30), "4.0 GiB");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
}

}  // namespace
}  // namespace aclctl
