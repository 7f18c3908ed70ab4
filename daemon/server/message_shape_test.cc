#include "daemon/server/message_shape.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/acl/protocol.h"
#include "proto/acl/transport_types.h"
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
  // A full batch of launches, each with as many one-byte placeholders as a
  // launch may carry.
  ClientMessage message;
  message.set_call_id(7);
  for (int i = 0; i < acld::kMaxBatchOps + 64; ++i) {
    acl::v1::AsyncOp* op = message.mutable_async_batch()->add_ops();
    acl::v1::LaunchFunction* launch = op->mutable_launch_function();
    launch->set_args(std::string(64, 'a'));
    for (size_t p = 0; p < acld::kMaxPlaceholders; ++p) launch->add_placeholders()->set_data("p");
    launch->mutable_core_limits();
  }
  EXPECT_TRUE(CheckNestedMessages(message.SerializeAsString(), *ClientMessage::descriptor()).ok());
  // A large payload is bytes, not messages.
  ClientMessage binary;
  binary.mutable_load_binary()->set_inline_data(std::string(8 << 20, 'b'));
  EXPECT_TRUE(CheckNestedMessages(binary.SerializeAsString(), *ClientMessage::descriptor()).ok());
}

TEST(MessageShapeTest, ARequestOfEmptyMessagesIsRefusedBeforeItIsParsed) {
  const std::string within = BatchOfEmptyOps(NestedMessageAllowance() - 1);
  EXPECT_TRUE(CheckNestedMessages(within, *ClientMessage::descriptor()).ok());
  const std::string over = BatchOfEmptyOps(NestedMessageAllowance());
  const absl::Status refused = CheckNestedMessages(over, *ClientMessage::descriptor());
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(refused.message().find("holds more than"), std::string::npos) << refused;
}

// Fields the parser does not know are kept one by one, as are groups and the
// fields inside them: they count as nested messages do.
TEST(MessageShapeTest, UnknownFieldsAndGroupsCount) {
  const size_t many = NestedMessageAllowance() + 1;
  std::string unknown_strings, unknown_varints, group_of_unknowns, scalar_as_string;
  for (size_t i = 0; i < many; ++i) {
    unknown_strings.append("\x12\x00", 2);   // field 2 (not in ClientMessage), empty bytes
    unknown_varints.append("\x10\x00", 2);   // field 2 as a varint
    scalar_as_string.append("\x0a\x00", 2);  // call_id (field 1, a varint) sent as bytes
  }
  group_of_unknowns = "\x13" + unknown_varints + "\x14";  // group 2 around them
  for (const std::string* bytes :
       {&unknown_strings, &unknown_varints, &group_of_unknowns, &scalar_as_string}) {
    EXPECT_TRUE(absl::IsInvalidArgument(CheckNestedMessages(*bytes, *ClientMessage::descriptor())))
        << bytes->size();
  }
  std::string empty_groups;
  for (size_t i = 0; i < many; ++i) empty_groups.append("\x13\x14", 2);
  EXPECT_TRUE(
      absl::IsInvalidArgument(CheckNestedMessages(empty_groups, *ClientMessage::descriptor())));
  // A handful of them is fine.
  EXPECT_TRUE(CheckNestedMessages(std::string("\x12\x00\x10\x00\x13\x14", 6),
                                  *ClientMessage::descriptor())
                  .ok());
}

TEST(MessageShapeTest, MalformedBytesAreLeftToTheParser) {
  for (const std::string& bytes : {std::string("\xe2\x03\xff\xff\xff\xff\x0f", 7),
                                   std::string("\xe2\x03\x05\x0a\x10", 5),
                                   std::string("\x00", 1), std::string("\x14", 1),
                                   std::string()}) {
    EXPECT_TRUE(CheckNestedMessages(bytes, *ClientMessage::descriptor()).ok());
  }
}

}  // namespace
}  // namespace acld::server
