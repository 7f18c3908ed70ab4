#include "daemon/server/message_shape.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {
namespace {

using acl::v1::ClientMessage;

// A ClientMessage whose batch holds `ops` empty operations.
std::string BatchOfEmptyOps(size_t ops) {
  ClientMessage message;
  for (size_t i = 0; i < ops; ++i) message.mutable_async_batch()->add_ops();
  return message.SerializeAsString();
}

TEST(MessageShapeTest, RequestsOfOurClientsPass) {
  ClientMessage message;
  message.set_call_id(7);
  for (int i = 0; i < 1024; ++i) {
    acl::v1::AsyncOp* op = message.mutable_async_batch()->add_ops();
    acl::v1::LaunchFunction* launch = op->mutable_launch_function();
    launch->set_args(std::string(64, 'a'));
    launch->add_placeholders()->set_data("p");
    launch->mutable_core_limits();
  }
  EXPECT_TRUE(CheckNestedMessages(message.SerializeAsString(), *ClientMessage::descriptor()).ok());
  // A large payload is bytes, not messages.
  ClientMessage binary;
  binary.mutable_load_binary()->set_inline_data(std::string(8 << 20, 'b'));
  EXPECT_TRUE(CheckNestedMessages(binary.SerializeAsString(), *ClientMessage::descriptor()).ok());
}

TEST(MessageShapeTest, ARequestOfEmptyMessagesIsRefusedBeforeItIsParsed) {
  const size_t allowance = NestedMessageAllowance(2 * 100000);
  const std::string within = BatchOfEmptyOps(allowance / 2);
  EXPECT_TRUE(CheckNestedMessages(within, *ClientMessage::descriptor()).ok());
  const std::string over = BatchOfEmptyOps(100000);
  const absl::Status refused = CheckNestedMessages(over, *ClientMessage::descriptor());
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(refused.message().find("nests more than"), std::string::npos) << refused;
}

TEST(MessageShapeTest, MalformedBytesAreLeftToTheParser) {
  for (const std::string bytes : {std::string("\xe2\x03\xff\xff\xff\xff\x0f", 7),
                                  std::string("\xe2\x03\x05\x0a\x10", 5), std::string("\x00", 1),
                                  std::string()}) {
    EXPECT_TRUE(CheckNestedMessages(bytes, *ClientMessage::descriptor()).ok());
  }
}

}  // namespace
}  // namespace acld::server
