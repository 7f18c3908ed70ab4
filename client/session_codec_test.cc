#include "client/session_codec.h"

#include <cstdint>
#include <random>
#include <string>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"

namespace acl_client::codec {
namespace {

// What the other side reads: the message after a trip through its bytes.
template <typename Message>
Message OverTheWire(const Message& message) {
  Message received;
  EXPECT_TRUE(received.ParseFromString(message.SerializeAsString()));
  return received;
}

Reply Answer(void (*fill)(Reply&)) {
  Reply reply;
  fill(reply);
  return OverTheWire(reply);
}

int32_t Code(const absl::Status& status) { return acld::AclCodeOf(status); }

TEST(SessionCodecTest, HelloSpeaksTheProtocolVersion) {
  const ClientMessage hello = OverTheWire(Hello("token", 42, 1000, "app --flag"));
  ASSERT_TRUE(hello.has_hello());
  EXPECT_EQ(hello.hello().protocol_version(), acld::kStreamProtocolVersion);
  EXPECT_EQ(hello.hello().peer_token(), "token");
  EXPECT_EQ(hello.hello().pid(), 42);
  EXPECT_EQ(hello.hello().uid(), 1000u);
  EXPECT_EQ(hello.hello().command(), "app --flag");
}

TEST(SessionCodecTest, SessionOpenedRoundTrip) {
  Reply reply;
  acl::v1::SessionOpened& opened = *reply.mutable_session_opened();
  opened.set_device_count(2);
  opened.set_soc_name("Ascend910B");
  acl::v1::KernelSignature& kernel = *opened.add_kernels();
  kernel.set_name("add_f16");
  kernel.set_arg_count(4);
  for (uint64_t device = 0; device < 2; ++device) {
    acl::v1::AddressRange& window = *opened.add_device_addresses();
    window.set_begin((device + 1) << 40);
    window.set_end((device + 2) << 40);
  }
  opened.add_device_features()->add_cann_attributes(0);
  opened.add_device_features()->add_capabilities(21);
  absl::StatusOr<SessionInfo> info = SessionOpenedOf(OverTheWire(reply));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->device_count, 2);
  EXPECT_EQ(info->soc_name, "Ascend910B");
  ASSERT_EQ(info->kernels.size(), 1u);
  EXPECT_EQ(info->kernels[0], std::make_pair(std::string("add_f16"), size_t{4}));
  ASSERT_EQ(info->device_addresses.size(), 2u);
  EXPECT_TRUE(info->device_addresses[1].Contains(uint64_t{2} << 40));
  EXPECT_FALSE(info->device_addresses[1].Contains(uint64_t{3} << 40));
  ASSERT_EQ(info->device_features.size(), 2u);
  EXPECT_EQ(info->device_features[0].cann_attributes, std::vector<int32_t>{0});
  EXPECT_TRUE(info->device_features[0].capabilities.empty());
  EXPECT_EQ(info->device_features[1].capabilities, std::vector<int32_t>{21});
}

TEST(SessionCodecTest, InitializeCarriesTheSettings) {
  acld::InitSettings settings;
  settings.config_content = "{\"dump\": {}}";
  settings.default_device = 1;
  settings.settings = {{"dump.mode", "off"}};
  const ClientMessage request = OverTheWire(Initialize(settings));
  ASSERT_TRUE(request.has_initialize());
  EXPECT_EQ(request.initialize().config_content(), settings.config_content);
  EXPECT_TRUE(request.initialize().has_default_device());
  EXPECT_EQ(request.initialize().default_device(), 1);
  EXPECT_EQ(request.initialize().settings().at("dump.mode"), "off");

  const ClientMessage no_device = OverTheWire(Initialize(acld::InitSettings{}));
  EXPECT_FALSE(no_device.initialize().has_default_device());
}

TEST(SessionCodecTest, LaunchFunctionRoundTrip) {
  acld::FunctionLaunch launch;
  launch.function = 7;
  launch.block_dim = 8;
  launch.args = std::string("\x01\x00\x02", 3);
  launch.placeholders = {{8, "data"}};
  const AsyncOp op = OverTheWire(LaunchFunction(3, 99, launch));
  EXPECT_EQ(op.stream(), 3u);
  EXPECT_EQ(op.thread(), 99u);
  ASSERT_TRUE(op.has_launch_function());
  EXPECT_EQ(op.launch_function().function(), 7u);
  EXPECT_EQ(op.launch_function().block_dim(), 8u);
  EXPECT_EQ(op.launch_function().args(), launch.args);
  ASSERT_EQ(op.launch_function().placeholders_size(), 1);
  EXPECT_EQ(op.launch_function().placeholders(0).offset(), 8u);
  EXPECT_EQ(op.launch_function().placeholders(0).data(), "data");
}

TEST(SessionCodecTest, LaunchKernelAndMemset) {
  const AsyncOp kernel = OverTheWire(LaunchKernel(1, 2, acld::KernelRequest{"fill", 4, {5, 6}}));
  EXPECT_EQ(kernel.launch_kernel().name(), "fill");
  EXPECT_EQ(kernel.launch_kernel().block_dim(), 4u);
  ASSERT_EQ(kernel.launch_kernel().args_size(), 2);
  EXPECT_EQ(kernel.launch_kernel().args(1), 6u);

  const acld::MemsetRequest memset{0x1000, 64, 0xab, 32};
  for (const acl::v1::MemsetRequest& proto :
       {OverTheWire(Memset(memset)).memset(), OverTheWire(MemsetAsync(1, 2, memset)).memset()}) {
    EXPECT_EQ(proto.device_dst(), 0x1000u);
    EXPECT_EQ(proto.max_count(), 64u);
    EXPECT_EQ(proto.value(), 0xab);
    EXPECT_EQ(proto.count(), 32u);
  }
}

TEST(SessionCodecTest, CopyRangeSetsOnlyTheDeviceSides) {
  using Direction = acld::CopyDirection;
  const acl::v1::CopyRequest h2d = CopyRange(Direction::kHostToDevice, 0x1000, 0x2000, 16, 8);
  EXPECT_EQ(h2d.direction(), acl::v1::CopyRequest::HOST_TO_DEVICE);
  EXPECT_EQ(h2d.device_dst(), 0x1010u);
  EXPECT_EQ(h2d.device_src(), 0u);
  EXPECT_EQ(h2d.count(), 8u);

  const acl::v1::CopyRequest d2h = CopyRange(Direction::kDeviceToHost, 0x1000, 0x2000, 16, 8);
  EXPECT_EQ(d2h.direction(), acl::v1::CopyRequest::DEVICE_TO_HOST);
  EXPECT_EQ(d2h.device_dst(), 0u);
  EXPECT_EQ(d2h.device_src(), 0x2010u);

  acl::v1::CopyRequest d2d = CopyRange(Direction::kDeviceToDevice, 0x1000, 0x2000, 0, 8);
  EXPECT_EQ(d2d.direction(), acl::v1::CopyRequest::DEVICE_TO_DEVICE);
  EXPECT_EQ(d2d.device_dst(), 0x1000u);
  EXPECT_EQ(d2d.device_src(), 0x2000u);

  SetShared(5, 4096, d2d);
  const ClientMessage to_client = OverTheWire(CopyToClient(3, 4, d2d));
  EXPECT_EQ(to_client.copy_to_client().stream(), 3u);
  EXPECT_EQ(to_client.copy_to_client().thread(), 4u);
  EXPECT_EQ(to_client.copy_to_client().copy().shared().segment(), 5u);
  EXPECT_EQ(to_client.copy_to_client().copy().shared().offset(), 4096u);
}

TEST(SessionCodecTest, LoadBinaryInlineOrShared) {
  const ClientMessage inline_load = OverTheWire(LoadBinaryInline(1, "bytes"));
  EXPECT_EQ(inline_load.load_binary().device_id(), 1);
  EXPECT_EQ(inline_load.load_binary().size(), 5u);
  EXPECT_EQ(inline_load.load_binary().inline_data(), "bytes");

  const ClientMessage shared = OverTheWire(LoadBinaryShared(1, 1 << 20, 9, 0));
  EXPECT_EQ(shared.load_binary().size(), uint64_t{1} << 20);
  EXPECT_EQ(shared.load_binary().shared().segment(), 9u);
}

TEST(SessionCodecTest, TypedRepliesRoundTrip) {
  EXPECT_EQ(*InitCountOf(Answer([](Reply& r) { r.mutable_init_count()->set_count(3); })), 3u);
  EXPECT_EQ(*HandleOf(Answer([](Reply& r) { r.mutable_handle()->set_handle(77); })), 77u);
  EXPECT_EQ(
      *DeviceAddressOf(Answer([](Reply& r) { r.mutable_device_address()->set_address(0x4000); })),
      0x4000u);
  EXPECT_FALSE(*StreamIdleOf(Answer([](Reply& r) { r.mutable_stream_query(); })));
  EXPECT_FLOAT_EQ(
      *ElapsedMsOf(Answer([](Reply& r) { r.mutable_elapsed_time()->set_milliseconds(1.5f); })),
      1.5f);

  absl::StatusOr<acld::ContextInfo> context = ContextOf(Answer([](Reply& r) {
    r.mutable_context()->set_context(5);
    r.mutable_context()->set_device_id(1);
    r.mutable_context()->set_default_stream(6);
  }));
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(context->context, 5u);
  EXPECT_EQ(context->device, 1);
  EXPECT_EQ(context->default_stream, 6u);

  absl::StatusOr<acld::EventStatus> event =
      EventStatusOf(Answer([](Reply& r) { r.mutable_event_status()->set_complete(true); }));
  ASSERT_TRUE(event.ok());
  EXPECT_TRUE(event->complete);
  EXPECT_FALSE(event->recorded_and_complete);

  absl::StatusOr<acld::MemInfo> memory = MemInfoOf(Answer([](Reply& r) {
    r.mutable_mem_info()->set_free(1);
    r.mutable_mem_info()->set_total(2);
  }));
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->free, 1u);
  EXPECT_EQ(memory->total, 2u);

  EXPECT_EQ(*CopiedBytesOf(Answer([](Reply& r) { r.set_data("abc"); })), "abc");
  // A copy that failed on its stream answers without bytes (not an error here).
  EXPECT_EQ(*CopiedBytesOf(Reply()), "");
}

TEST(SessionCodecTest, ErrorsPassThrough) {
  Reply refused;
  refused.set_acl_error(ACL_ERROR_RT_MEMORY_ALLOCATION);
  refused.set_error_message("out of memory");
  const absl::Status error = ErrorOf(OverTheWire(refused));
  EXPECT_EQ(Code(error), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(error.message(), "out of memory");
  EXPECT_TRUE(ErrorOf(Reply()).ok());

  const absl::Status lost = acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "lost");
  EXPECT_EQ(Code(HandleOf(lost).status()), ACL_ERROR_RT_SOCKET_CLOSE);
  EXPECT_EQ(Code(CopiedBytesOf(lost).status()), ACL_ERROR_RT_SOCKET_CLOSE);
  EXPECT_EQ(Code(SessionOpenedOf(lost).status()), ACL_ERROR_RT_SOCKET_CLOSE);
}

TEST(SessionCodecTest, AMissingOrWrongResultIsAClearError) {
  const absl::Status missing = HandleOf(Reply()).status();
  EXPECT_EQ(Code(missing), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_NE(missing.message().find("expected handle, got no result"), absl::string_view::npos)
      << missing;

  const Reply wrong = Answer([](Reply& r) { r.mutable_mem_info()->set_free(1); });
  const absl::Status mixed_up = ContextOf(wrong).status();
  EXPECT_EQ(Code(mixed_up), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_NE(mixed_up.message().find("expected context, got mem_info"), absl::string_view::npos)
      << mixed_up;
  EXPECT_EQ(Code(CopiedBytesOf(wrong).status()), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(Code(SessionOpenedOf(wrong).status()), ACL_ERROR_RT_INTERNAL_ERROR);
}

TEST(SessionCodecTest, HostileSessionOpenedIsRefused) {
  Reply too_many;
  too_many.mutable_session_opened()->set_device_count(0xffffffffu);
  EXPECT_EQ(Code(SessionOpenedOf(too_many).status()), ACL_ERROR_RT_INTERNAL_ERROR);

  Reply backwards;
  acl::v1::AddressRange& window = *backwards.mutable_session_opened()->add_device_addresses();
  window.set_begin(200);
  window.set_end(100);
  EXPECT_EQ(Code(SessionOpenedOf(backwards).status()), ACL_ERROR_RT_INTERNAL_ERROR);
}

// Whatever bytes arrive as a reply, decoding answers a value or an error.
TEST(SessionCodecTest, RandomRepliesNeverCrash) {
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 64);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(length(random), '\0');
    for (char& c : bytes) c = static_cast<char>(byte(random));
    Reply reply;
    if (!reply.ParseFromString(bytes)) continue;
    ErrorOf(reply).IgnoreError();
    SessionOpenedOf(reply).status().IgnoreError();
    InitCountOf(reply).status().IgnoreError();
    HandleOf(reply).status().IgnoreError();
    ContextOf(reply).status().IgnoreError();
    StreamIdleOf(reply).status().IgnoreError();
    EventStatusOf(reply).status().IgnoreError();
    ElapsedMsOf(reply).status().IgnoreError();
    DeviceAddressOf(reply).status().IgnoreError();
    MemInfoOf(reply).status().IgnoreError();
    CopiedBytesOf(reply).status().IgnoreError();
  }
}

}  // namespace
}  // namespace acl_client::codec
