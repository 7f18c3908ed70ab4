#include "daemon/server/device_renumbering.h"

#include <string>

#include "acl/acl_base.h"
#include "daemon/core/device_view.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {
namespace {

using acl::v1::ClientMessage;
using acl::v1::Reply;
using acl::v1::ServerMessage;

int Code(const absl::Status& status) { return AclCodeOf(status); }

// The session sees host devices 2 and 0 as its devices 0 and 1.
DeviceRenumbering GroupRenumbering() { return DeviceRenumbering(DeviceView::Of({2, 0})); }

ClientMessage SetDevice(int32_t device) {
  ClientMessage message;
  message.set_call_id(7);
  message.mutable_set_device()->set_device_id(device);
  return message;
}

TEST(DeviceRenumberingTest, AGroupViewIsActiveTheHostsIsNot) {
  EXPECT_TRUE(GroupRenumbering().active());
  EXPECT_FALSE(DeviceRenumbering(DeviceView::Host(4)).active());
  EXPECT_EQ(GroupRenumbering().view().count(), 2);
}

TEST(DeviceRenumberingTest, DeviceZeroIsRenumberedThoughItIsTheProtoDefault) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  ClientMessage message = SetDevice(0);
  ASSERT_TRUE(renumbering.ToHost(message).ok());
  EXPECT_EQ(message.set_device().device_id(), 2);
  EXPECT_EQ(message.call_id(), 7u);  // nothing else changes
  // A request that never set the field at all is device 0 too.
  ClientMessage unset;
  unset.mutable_set_device();
  ASSERT_TRUE(renumbering.ToHost(unset).ok());
  EXPECT_EQ(unset.set_device().device_id(), 2);
}

TEST(DeviceRenumberingTest, TheSessionsDevicesBecomeTheHosts) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  ClientMessage message = SetDevice(1);
  ASSERT_TRUE(renumbering.ToHost(message).ok());
  EXPECT_EQ(message.set_device().device_id(), 0);
  // Other requests that hold a device, and a request on its own.
  ClientMessage malloc;
  malloc.mutable_malloc()->set_device_id(1);
  malloc.mutable_malloc()->set_size(4096);
  ASSERT_TRUE(renumbering.ToHost(malloc).ok());
  EXPECT_EQ(malloc.malloc().device_id(), 0);
  EXPECT_EQ(malloc.malloc().size(), 4096u);
  acl::v1::CreateContextRequest create;
  create.set_device_id(0);
  ASSERT_TRUE(renumbering.ToHost(create).ok());
  EXPECT_EQ(create.device_id(), 2);
  // A device in a message inside a oneof of the body (LoadBinaryRequest).
  ClientMessage load;
  load.mutable_load_binary()->set_device_id(1);
  load.mutable_load_binary()->mutable_shared()->set_segment(3);
  ASSERT_TRUE(renumbering.ToHost(load).ok());
  EXPECT_EQ(load.load_binary().device_id(), 0);
  EXPECT_EQ(load.load_binary().shared().segment(), 3u);
}

TEST(DeviceRenumberingTest, AnIdOutsideTheGroupIsAnInvalidDeviceId) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  for (int32_t device : {2, 3, -1, 1 << 30}) {
    ClientMessage message = SetDevice(device);
    absl::Status status = renumbering.ToHost(message);
    EXPECT_EQ(Code(status), ACL_ERROR_RT_INVALID_DEVICEID) << device << ": " << status;
    EXPECT_EQ(Code(status), 107001);
    EXPECT_NE(status.message().find("2 devices"), absl::string_view::npos) << status;
  }
  ClientMessage reset;
  reset.mutable_reset_device()->set_device_id(2);
  EXPECT_EQ(Code(renumbering.ToHost(reset)), ACL_ERROR_RT_INVALID_DEVICEID);
}

TEST(DeviceRenumberingTest, WhichRequestsCarryADevice) {
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(SetDevice(0)));
  ClientMessage message;
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "no body";
  message.mutable_malloc();
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(message));
  message.mutable_initialize();
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(message)) << "default_device";
  message.mutable_create_context();
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(message));
  message.mutable_load_binary();
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(message));
  message.mutable_memory_access();
  EXPECT_TRUE(DeviceRenumbering::CarriesDevice(message));
  // Bodies that cannot hold a device are not walked at all.
  acl::v1::AsyncOp* op = message.mutable_async_batch()->add_ops();
  op->set_stream(5);
  op->mutable_copy()->set_count(8);
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "async batch";
  message.mutable_stream_query()->set_stream(5);
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "stream query";
  message.mutable_free()->set_address(64);
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "free";
  message.mutable_copy();
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "copy";
  message.mutable_callback_done();
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "callback done";
  message.mutable_hello()->set_pid(3);
  EXPECT_FALSE(DeviceRenumbering::CarriesDevice(message)) << "hello";
}

TEST(DeviceRenumberingTest, ABodyWithoutADeviceIsLeftAlone) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  ClientMessage message;
  acl::v1::AsyncOp* op = message.mutable_async_batch()->add_ops();
  op->set_stream(5);
  op->mutable_launch_kernel()->set_name("add");
  const std::string before = message.SerializeAsString();
  ASSERT_TRUE(renumbering.ToHost(message).ok());
  EXPECT_EQ(message.SerializeAsString(), before);
}

TEST(DeviceRenumberingTest, TheDefaultDeviceOfInitializeIsRenumbered) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  ClientMessage message;
  message.mutable_initialize()->set_has_default_device(true);
  message.mutable_initialize()->set_default_device(1);
  message.mutable_initialize()->set_config_content("{}");
  ASSERT_TRUE(renumbering.ToHost(message).ok());
  EXPECT_EQ(message.initialize().default_device(), 0);
  EXPECT_TRUE(message.initialize().has_default_device());
  EXPECT_EQ(message.initialize().config_content(), "{}");
  message.mutable_initialize()->set_default_device(0);
  ASSERT_TRUE(renumbering.ToHost(message).ok());
  EXPECT_EQ(message.initialize().default_device(), 2);
  message.mutable_initialize()->set_default_device(2);
  EXPECT_EQ(Code(renumbering.ToHost(message)), ACL_ERROR_RT_INVALID_DEVICEID);
}

TEST(DeviceRenumberingTest, RepliesGetTheSessionsIds) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  Reply reply;
  reply.mutable_context()->set_context(11);
  reply.mutable_context()->set_device_id(2);
  reply.mutable_context()->set_default_stream(12);
  ASSERT_TRUE(renumbering.ToSession(reply).ok());
  EXPECT_EQ(reply.context().device_id(), 0);
  EXPECT_EQ(reply.context().context(), 11u);
  EXPECT_EQ(reply.context().default_stream(), 12u);
  reply.mutable_context()->set_device_id(0);
  ASSERT_TRUE(renumbering.ToSession(reply).ok());
  EXPECT_EQ(reply.context().device_id(), 1);
  // Inside a server message too.
  ServerMessage message;
  message.mutable_reply()->mutable_physical_info()->set_device_id(2);
  ASSERT_TRUE(renumbering.ToSession(message).ok());
  EXPECT_EQ(message.reply().physical_info().device_id(), 0);
  // A reply whose result holds no device (or none at all) is unchanged.
  Reply plain;
  plain.set_acl_error(ACL_ERROR_INVALID_PARAM);
  plain.set_error_message("no");
  const std::string before = plain.SerializeAsString();
  ASSERT_TRUE(renumbering.ToSession(plain).ok());
  EXPECT_EQ(plain.SerializeAsString(), before);
  plain.mutable_device_count()->set_count(2);
  ASSERT_TRUE(renumbering.ToSession(plain).ok());
  EXPECT_EQ(plain.device_count().count(), 2u);
}

TEST(DeviceRenumberingTest, AHostDeviceOutsideTheViewFailsOnTheWayOut) {
  const DeviceRenumbering renumbering = GroupRenumbering();
  Reply reply;
  reply.mutable_context()->set_device_id(1);  // the host's device 1: not the group's
  absl::Status status = renumbering.ToSession(reply);
  EXPECT_EQ(Code(status), ACL_ERROR_RT_INVALID_DEVICEID) << status;
  EXPECT_NE(status.message().find("outside this process's quota group"), absl::string_view::npos)
      << status;
  // The group's process knows its devices by other numbers: the host's are
  // not told.
  EXPECT_EQ(status.message().find('1'), absl::string_view::npos) << status;
  Reply shared;
  shared.mutable_shared_event()->set_device_id(3);
  EXPECT_EQ(Code(renumbering.ToSession(shared)), ACL_ERROR_RT_INVALID_DEVICEID);
}

TEST(DeviceRenumberingTest, TheHostViewLeavesMessagesUnchanged) {
  const DeviceRenumbering renumbering(DeviceView::Host(4));
  for (int32_t device : {0, 1, 3, 7, -1}) {
    ClientMessage message = SetDevice(device);
    ASSERT_TRUE(renumbering.ToHost(message).ok());
    EXPECT_EQ(message.set_device().device_id(), device);
    Reply reply;
    reply.mutable_context()->set_device_id(device);
    ASSERT_TRUE(renumbering.ToSession(reply).ok());
    EXPECT_EQ(reply.context().device_id(), device);
  }
  ClientMessage initialize;
  initialize.mutable_initialize()->set_has_default_device(true);
  initialize.mutable_initialize()->set_default_device(2);
  const std::string before = initialize.SerializeAsString();
  ASSERT_TRUE(renumbering.ToHost(initialize).ok());
  EXPECT_EQ(initialize.SerializeAsString(), before);
}

}  // namespace
}  // namespace acld::server
