#include "client/session_codec.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"

namespace acl_client::codec {
namespace {

using Direction = acld::CopyDirection;

// The name of a reply's result, as runtime.proto spells it.
std::string ResultName(Reply::ResultCase result) {
  if (result == Reply::RESULT_NOT_SET) return "no result";
  const google::protobuf::FieldDescriptor* field =
      Reply::descriptor()->FindFieldByNumber(static_cast<int>(result));
  return field != nullptr ? field->name() : absl::StrCat("result #", static_cast<int>(result));
}

absl::Status Malformed(absl::string_view what) {
  return acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR,
                         absl::StrCat("acld's reply is malformed: ", what,
                                      " (are acld and libascendcl.so of the same version?)"));
}

// The reply, when it succeeded and carries `expected`.
absl::StatusOr<const Reply*> Expect(const absl::StatusOr<Reply>& reply,
                                    Reply::ResultCase expected) {
  if (!reply.ok()) return reply.status();
  if (reply->result_case() != expected) {
    return Malformed(absl::StrCat("expected ", ResultName(expected), ", got ",
                                  ResultName(reply->result_case())));
  }
  return &*reply;
}

acl::v1::CopyRequest::Direction ToProto(Direction direction) {
  switch (direction) {
    case Direction::kHostToDevice:
      return acl::v1::CopyRequest::HOST_TO_DEVICE;
    case Direction::kDeviceToHost:
      return acl::v1::CopyRequest::DEVICE_TO_HOST;
    case Direction::kDeviceToDevice:
      return acl::v1::CopyRequest::DEVICE_TO_DEVICE;
  }
  return acl::v1::CopyRequest::DEVICE_TO_DEVICE;
}

// An asynchronous operation on `stream`, submitted by `thread`.
AsyncOp OpOn(uint64_t stream, uint64_t thread) {
  AsyncOp op;
  op.set_stream(stream);
  op.set_thread(thread);
  return op;
}

void SetMemset(const acld::MemsetRequest& memset, acl::v1::MemsetRequest& proto) {
  proto.set_device_dst(memset.device_dst);
  proto.set_max_count(memset.max_count);
  proto.set_value(memset.value);
  proto.set_count(memset.count);
}

}  // namespace

// --- replies ---

absl::Status ErrorOf(const Reply& reply) {
  if (reply.acl_error() == 0) return absl::OkStatus();
  return acld::AclStatus(reply.acl_error(), reply.error_message());
}

absl::StatusOr<SessionInfo> SessionOpenedOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kSessionOpened));
  const acl::v1::SessionOpened& opened = answer->session_opened();
  if (opened.device_count() > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
    return Malformed(absl::StrCat(opened.device_count(), " devices"));
  }
  SessionInfo info;
  info.device_count = static_cast<int32_t>(opened.device_count());
  info.soc_name = opened.soc_name();
  info.ring = opened.ring();
  for (const acl::v1::KernelSignature& kernel : opened.kernels()) {
    info.kernels.emplace_back(kernel.name(), kernel.arg_count());
  }
  for (const acl::v1::AddressRange& window : opened.device_addresses()) {
    if (window.begin() > window.end()) {
      return Malformed(absl::StrCat("a device address window ends (", window.end(),
                                    ") before it begins (", window.begin(), ")"));
    }
    info.device_addresses.push_back(acld::AddressRange{window.begin(), window.end()});
  }
  for (const acl::v1::DeviceFeatures& features : opened.device_features()) {
    info.device_features.push_back(acld::DeviceFeatures{
        {features.cann_attributes().begin(), features.cann_attributes().end()},
        {features.capabilities().begin(), features.capabilities().end()},
        {features.device_info().begin(), features.device_info().end()},
        {features.peers().begin(), features.peers().end()},
        features.float_overflow(), features.address_granularity()});
  }
  return info;
}

absl::StatusOr<uint64_t> InitCountOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kInitCount));
  return answer->init_count().count();
}

absl::StatusOr<uint64_t> HandleOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kHandle));
  return answer->handle().handle();
}

absl::StatusOr<acld::ContextInfo> ContextOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kContext));
  const acl::v1::ContextInfo& context = answer->context();
  return acld::ContextInfo{context.context(), context.device_id(), context.default_stream()};
}

absl::StatusOr<bool> StreamIdleOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kStreamQuery));
  return answer->stream_query().complete();
}

absl::StatusOr<acld::EventStatus> EventStatusOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kEventStatus));
  return acld::EventStatus{answer->event_status().complete(),
                           answer->event_status().recorded_and_complete()};
}

absl::StatusOr<float> ElapsedMsOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kElapsedTime));
  return answer->elapsed_time().milliseconds();
}

absl::StatusOr<uint64_t> TimestampUsOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kEventTimestamp));
  return answer->event_timestamp().microseconds();
}

absl::StatusOr<uint64_t> DeviceAddressOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kDeviceAddress));
  return answer->device_address().address();
}

absl::StatusOr<std::string> SharingKeyOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kSharingKey));
  return answer->sharing_key().key();
}

absl::StatusOr<int32_t> PeerPidOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kPeerPid));
  return answer->peer_pid().pid();
}

absl::StatusOr<acld::PhysicalProperties> PhysicalPropertiesOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kPhysicalInfo));
  return acld::PhysicalProperties{answer->physical_info().device_id(),
                                  answer->physical_info().huge_pages()};
}

absl::StatusOr<bool> MemoryAccessOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kPhysicalInfo));
  return answer->physical_info().readwrite();
}

absl::StatusOr<acld::SharedEventInfo> SharedEventOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kSharedEvent));
  return acld::SharedEventInfo{answer->shared_event().event(), answer->shared_event().device_id(),
                               answer->shared_event().flags()};
}

absl::StatusOr<acld::SharedNotifyInfo> SharedNotifyOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kSharedNotify));
  return acld::SharedNotifyInfo{answer->shared_notify().notify(),
                                answer->shared_notify().device_id()};
}

absl::StatusOr<acld::MemInfo> MemInfoOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kMemInfo));
  return acld::MemInfo{answer->mem_info().free(), answer->mem_info().total()};
}

absl::StatusOr<acld::Utilization> UtilizationOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kUtilization));
  return acld::Utilization{answer->utilization().compute_percent(),
                           answer->utilization().memory_percent()};
}

absl::StatusOr<acld::ObjectsAvailable> ObjectsAvailableOf(const absl::StatusOr<Reply>& reply) {
  ACL_ASSIGN_OR_RETURN(const Reply* answer, Expect(reply, Reply::kObjectsAvailable));
  return acld::ObjectsAvailable{answer->objects_available().streams(),
                                answer->objects_available().events()};
}

absl::StatusOr<std::string> CopiedBytesOf(absl::StatusOr<Reply> reply) {
  if (!reply.ok()) return reply.status();
  if (reply->result_case() == Reply::RESULT_NOT_SET) return std::string();
  ACL_RETURN_IF_ERROR(Expect(reply, Reply::kData).status());
  return std::move(*reply->mutable_data());
}

// --- requests ---

ClientMessage Hello(const std::string& peer_token, int32_t pid, uint32_t uid,
                    const std::string& command, const std::string& ring_ticket) {
  ClientMessage message;
  acl::v1::Hello& hello = *message.mutable_hello();
  hello.set_peer_token(peer_token);
  hello.set_ring_ticket(ring_ticket);
  hello.set_protocol_version(acld::kStreamProtocolVersion);
  hello.set_pid(pid);
  hello.set_uid(uid);
  hello.set_command(command);
  return message;
}

ClientMessage InitCount() {
  ClientMessage request;
  request.mutable_init_count();
  return request;
}

ClientMessage AddInitReference() {
  ClientMessage request;
  request.mutable_add_init_reference();
  return request;
}

ClientMessage Initialize(const acld::InitSettings& settings) {
  ClientMessage request;
  acl::v1::InitializeRequest& init = *request.mutable_initialize();
  init.set_config_content(settings.config_content);
  init.set_has_default_device(settings.default_device.has_value());
  init.set_default_device(settings.default_device.value_or(0));
  init.mutable_settings()->insert(settings.settings.begin(), settings.settings.end());
  return request;
}

ClientMessage AbortInit() {
  ClientMessage request;
  request.mutable_abort_init();
  return request;
}

ClientMessage DropInitReference() {
  ClientMessage request;
  request.mutable_drop_init_reference();
  return request;
}

ClientMessage Finalize() {
  ClientMessage request;
  request.mutable_finalize();
  return request;
}

ClientMessage SetDevice(int32_t device_id) {
  ClientMessage request;
  request.mutable_set_device()->set_device_id(device_id);
  return request;
}

ClientMessage ResetDevice(int32_t device_id, bool force) {
  ClientMessage request;
  request.mutable_reset_device()->set_device_id(device_id);
  request.mutable_reset_device()->set_force(force);
  return request;
}

ClientMessage SynchronizeDevice(int32_t device_id, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_device()->set_device_id(device_id);
  request.mutable_synchronize_device()->set_timeout_ms(timeout_ms);
  return request;
}

ClientMessage CreateContext(int32_t device_id) {
  ClientMessage request;
  request.mutable_create_context()->set_device_id(device_id);
  return request;
}

ClientMessage DestroyContext(uint64_t context) {
  ClientMessage request;
  request.mutable_destroy_context()->set_context(context);
  return request;
}

ClientMessage CreateStream(uint64_t context, uint32_t priority, uint32_t flags,
                           bool saturate_floats) {
  ClientMessage request;
  acl::v1::CreateStreamRequest& create = *request.mutable_create_stream();
  create.set_context(context);
  create.set_priority(priority);
  create.set_flags(flags);
  create.set_saturate_floats(saturate_floats);
  return request;
}

ClientMessage DestroyStream(uint64_t stream, bool force) {
  ClientMessage request;
  request.mutable_destroy_stream()->set_stream(stream);
  request.mutable_destroy_stream()->set_force(force);
  return request;
}

ClientMessage SynchronizeStream(uint64_t stream, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_stream()->set_stream(stream);
  request.mutable_synchronize_stream()->set_timeout_ms(timeout_ms);
  return request;
}

ClientMessage StreamQuery(uint64_t stream) {
  ClientMessage request;
  request.mutable_stream_query()->set_stream(stream);
  return request;
}

ClientMessage AbortStream(uint64_t stream) {
  ClientMessage request;
  request.mutable_abort_stream()->set_stream(stream);
  return request;
}

ClientMessage StopStream(uint64_t stream) {
  ClientMessage request;
  request.mutable_stop_stream()->set_stream(stream);
  return request;
}

ClientMessage SetStreamFailureMode(uint64_t stream, uint64_t mode) {
  ClientMessage request;
  request.mutable_set_stream_failure_mode()->set_stream(stream);
  request.mutable_set_stream_failure_mode()->set_mode(mode);
  return request;
}

ClientMessage SetStreamAllocator(uint64_t stream, bool registered) {
  ClientMessage request;
  request.mutable_set_stream_allocator()->set_stream(stream);
  request.mutable_set_stream_allocator()->set_registered(registered);
  return request;
}

ClientMessage CreateEvent(int32_t device_id, uint32_t flags) {
  ClientMessage request;
  request.mutable_create_event()->set_device_id(device_id);
  request.mutable_create_event()->set_flags(flags);
  return request;
}

ClientMessage DestroyEvent(uint64_t event) {
  ClientMessage request;
  request.mutable_destroy_event()->set_event(event);
  return request;
}

ClientMessage CreateNotify(int32_t device_id) {
  ClientMessage request;
  request.mutable_create_notify()->set_device_id(device_id);
  return request;
}

ClientMessage DestroyNotify(uint64_t notify) {
  ClientMessage request;
  request.mutable_destroy_notify()->set_notify(notify);
  return request;
}

ClientMessage SynchronizeEvent(uint64_t event, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_event()->set_event(event);
  request.mutable_synchronize_event()->set_timeout_ms(timeout_ms);
  return request;
}

ClientMessage QueryEvent(uint64_t event) {
  ClientMessage request;
  request.mutable_query_event()->set_event(event);
  return request;
}

ClientMessage EventElapsedTime(uint64_t start, uint64_t end) {
  ClientMessage request;
  request.mutable_event_elapsed_time()->set_start(start);
  request.mutable_event_elapsed_time()->set_end(end);
  return request;
}

ClientMessage EventTimestamp(uint64_t event) {
  ClientMessage request;
  request.mutable_event_timestamp()->set_event(event);
  return request;
}

ClientMessage LoadBinaryInline(int32_t device_id, absl::string_view binary) {
  ClientMessage request;
  acl::v1::LoadBinaryRequest& load = *request.mutable_load_binary();
  load.set_device_id(device_id);
  load.set_size(binary.size());
  load.set_inline_data(binary.data(), binary.size());
  return request;
}

ClientMessage LoadBinaryShared(int32_t device_id, uint64_t size, uint64_t segment,
                               uint64_t offset) {
  ClientMessage request;
  acl::v1::LoadBinaryRequest& load = *request.mutable_load_binary();
  load.set_device_id(device_id);
  load.set_size(size);
  load.mutable_shared()->set_segment(segment);
  load.mutable_shared()->set_offset(offset);
  return request;
}

ClientMessage UnloadBinary(uint64_t binary) {
  ClientMessage request;
  request.mutable_unload_binary()->set_binary(binary);
  return request;
}

ClientMessage GetFunction(uint64_t binary, const std::string& name) {
  ClientMessage request;
  request.mutable_get_function()->set_binary(binary);
  request.mutable_get_function()->set_name(name);
  return request;
}

ClientMessage Malloc(int32_t device_id, uint64_t size) {
  ClientMessage request;
  request.mutable_malloc()->set_device_id(device_id);
  request.mutable_malloc()->set_size(size);
  return request;
}

ClientMessage ExportMemory(uint64_t address, uint64_t size, uint64_t flags) {
  ClientMessage request;
  acl::v1::ExportMemoryRequest& exported = *request.mutable_export_memory();
  exported.set_address(address);
  exported.set_size(size);
  exported.set_flags(flags);
  return request;
}

ClientMessage MallocPhysical(int32_t device_id, uint64_t size, bool huge_pages) {
  ClientMessage request;
  request.mutable_malloc_physical()->set_device_id(device_id);
  request.mutable_malloc_physical()->set_size(size);
  request.mutable_malloc_physical()->set_huge_pages(huge_pages);
  return request;
}

ClientMessage RetainPhysical(uint64_t address) {
  ClientMessage request;
  request.mutable_retain_physical()->set_address(address);
  return request;
}

ClientMessage PhysicalProperties(uint64_t handle) {
  ClientMessage request;
  request.mutable_physical_properties()->set_handle(handle);
  return request;
}

ClientMessage MemoryAccess(uint64_t address, int32_t device_id) {
  ClientMessage request;
  request.mutable_memory_access()->set_address(address);
  request.mutable_memory_access()->set_device_id(device_id);
  return request;
}

ClientMessage FreePhysical(uint64_t handle) {
  ClientMessage request;
  request.mutable_free_physical()->set_handle(handle);
  return request;
}

ClientMessage ReserveAddresses(int32_t device_id, uint64_t size) {
  ClientMessage request;
  request.mutable_reserve_addresses()->set_device_id(device_id);
  request.mutable_reserve_addresses()->set_size(size);
  return request;
}

ClientMessage ReleaseAddresses(uint64_t address) {
  ClientMessage request;
  request.mutable_release_addresses()->set_address(address);
  return request;
}

ClientMessage MapMemory(uint64_t address, uint64_t size, uint64_t offset, uint64_t handle,
                        bool accessible) {
  ClientMessage request;
  acl::v1::MapMemoryRequest& map = *request.mutable_map_memory();
  map.set_address(address);
  map.set_size(size);
  map.set_offset(offset);
  map.set_handle(handle);
  map.set_accessible(accessible);
  return request;
}

ClientMessage UnmapMemory(uint64_t address) {
  ClientMessage request;
  request.mutable_unmap_memory()->set_address(address);
  return request;
}

ClientMessage SetMemoryAccess(uint64_t address, uint64_t size, int32_t device_id, bool readwrite) {
  ClientMessage request;
  acl::v1::SetMemoryAccessRequest& access = *request.mutable_set_memory_access();
  access.set_address(address);
  access.set_size(size);
  access.set_device_id(device_id);
  access.set_readwrite(readwrite);
  return request;
}

ClientMessage ExportPhysical(uint64_t handle, bool pid_validation) {
  ClientMessage request;
  request.mutable_export_physical()->set_handle(handle);
  request.mutable_export_physical()->set_pid_validation(pid_validation);
  return request;
}

ClientMessage SetShareablePids(uint64_t shareable, const std::vector<int32_t>& pids) {
  ClientMessage request;
  request.mutable_set_shareable_pids()->set_shareable(shareable);
  for (int32_t pid : pids) request.mutable_set_shareable_pids()->add_pids(pid);
  return request;
}

ClientMessage ImportPhysical(uint64_t shareable, int32_t device_id) {
  ClientMessage request;
  request.mutable_import_physical()->set_shareable(shareable);
  request.mutable_import_physical()->set_device_id(device_id);
  return request;
}

ClientMessage SetImportPids(const std::string& key, const std::vector<int32_t>& pids) {
  ClientMessage request;
  request.mutable_set_import_pids()->set_key(key);
  for (int32_t pid : pids) request.mutable_set_import_pids()->add_pids(pid);
  return request;
}

ClientMessage SetExportAttribute(const std::string& key, int32_t type, uint64_t value) {
  ClientMessage request;
  acl::v1::SetExportAttributeRequest& attribute = *request.mutable_set_export_attribute();
  attribute.set_key(key);
  attribute.set_type(type);
  attribute.set_value(value);
  return request;
}

ClientMessage ImportMemory(const std::string& key) {
  ClientMessage request;
  request.mutable_import_memory()->set_key(key);
  return request;
}

ClientMessage CloseMemoryKey(const std::string& key) {
  ClientMessage request;
  request.mutable_close_memory_key()->set_key(key);
  return request;
}

ClientMessage PeerPid() {
  ClientMessage request;
  request.mutable_peer_pid();
  return request;
}

ClientMessage ShareEvent(uint64_t event) {
  ClientMessage request;
  request.mutable_share_event()->set_event(event);
  return request;
}

ClientMessage OpenSharedEvent(const std::string& key) {
  ClientMessage request;
  request.mutable_open_shared_event()->set_key(key);
  return request;
}

ClientMessage ShareNotify(uint64_t notify, bool pid_validation) {
  ClientMessage request;
  request.mutable_share_notify()->set_notify(notify);
  request.mutable_share_notify()->set_pid_validation(pid_validation);
  return request;
}

ClientMessage SetNotifyImportPids(uint64_t notify, const std::vector<int32_t>& pids) {
  ClientMessage request;
  request.mutable_set_notify_import_pids()->set_notify(notify);
  for (int32_t pid : pids) request.mutable_set_notify_import_pids()->add_pids(pid);
  return request;
}

ClientMessage ImportNotify(const std::string& key) {
  ClientMessage request;
  request.mutable_import_notify()->set_key(key);
  return request;
}

ClientMessage Free(uint64_t address) {
  ClientMessage request;
  request.mutable_free()->set_address(address);
  return request;
}

ClientMessage Memset(const acld::MemsetRequest& memset) {
  ClientMessage request;
  SetMemset(memset, *request.mutable_memset());
  return request;
}

ClientMessage GetMemInfo(int32_t device_id) {
  ClientMessage request;
  request.mutable_get_mem_info()->set_device_id(device_id);
  return request;
}

ClientMessage GetUtilization(int32_t device_id) {
  ClientMessage request;
  request.mutable_get_utilization()->set_device_id(device_id);
  return request;
}

ClientMessage GetObjectsAvailable(int32_t device_id) {
  ClientMessage request;
  request.mutable_objects_available()->set_device_id(device_id);
  return request;
}

ClientMessage RegisterSharedMemory(const std::string& ticket, uint64_t size, bool staging) {
  ClientMessage request;
  request.mutable_register_shared_memory()->set_ticket(ticket);
  request.mutable_register_shared_memory()->set_size(size);
  request.mutable_register_shared_memory()->set_staging(staging);
  return request;
}

ClientMessage UnregisterSharedMemory(uint64_t segment) {
  ClientMessage request;
  request.mutable_unregister_shared_memory()->set_segment(segment);
  return request;
}

acl::v1::CopyRequest CopyRange(Direction direction, uint64_t device_dst, uint64_t device_src,
                               uint64_t offset, uint64_t count) {
  acl::v1::CopyRequest proto;
  proto.set_direction(ToProto(direction));
  if (direction != Direction::kDeviceToHost) proto.set_device_dst(device_dst + offset);
  if (direction != Direction::kHostToDevice) proto.set_device_src(device_src + offset);
  proto.set_count(count);
  return proto;
}

void SetShared(uint64_t segment, uint64_t offset, acl::v1::CopyRequest& copy) {
  copy.mutable_shared()->set_segment(segment);
  copy.mutable_shared()->set_offset(offset);
}

ClientMessage Copy(acl::v1::CopyRequest copy) {
  ClientMessage request;
  *request.mutable_copy() = std::move(copy);
  return request;
}

ClientMessage CopyToClient(uint64_t stream, uint64_t thread, acl::v1::CopyRequest copy) {
  ClientMessage request;
  acl::v1::CopyAsync& to_client = *request.mutable_copy_to_client();
  *to_client.mutable_copy() = std::move(copy);
  to_client.set_stream(stream);
  to_client.set_thread(thread);
  return request;
}

// Only limits that are set travel: most launches carry none.
template <typename Launch>
void SetCoreLimits(const acld::CoreLimits& limits, Launch& launch) {
  if (limits.cube == 0 && limits.vector == 0) return;
  launch.mutable_core_limits()->set_cube(limits.cube);
  launch.mutable_core_limits()->set_vector(limits.vector);
}

AsyncOp LaunchKernel(uint64_t stream, uint64_t thread, const acld::KernelRequest& kernel) {
  AsyncOp op;
  SetLaunchKernel(stream, thread, kernel, op);
  return op;
}

void SetLaunchKernel(uint64_t stream, uint64_t thread, const acld::KernelRequest& kernel,
                     AsyncOp& op) {
  op.set_stream(stream);
  op.set_thread(thread);
  acl::v1::LaunchKernel& launch = *op.mutable_launch_kernel();
  launch.set_name(kernel.name);
  launch.set_block_dim(kernel.block_dim);
  launch.mutable_args()->Add(kernel.args.begin(), kernel.args.end());
  SetCoreLimits(kernel.core_limits, launch);
}

AsyncOp LaunchFunction(uint64_t stream, uint64_t thread, const acld::FunctionLaunch& launch) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::LaunchFunction& proto = *op.mutable_launch_function();
  proto.set_function(launch.function);
  proto.set_block_dim(launch.block_dim);
  proto.set_args(launch.args);
  proto.set_args_address(launch.args_address);
  proto.set_args_size(launch.args_size);
  SetCoreLimits(launch.core_limits, proto);
  for (const acld::Placeholder& placeholder : launch.placeholders) {
    acl::v1::Placeholder& slot = *proto.add_placeholders();
    slot.set_offset(placeholder.offset);
    slot.set_data(placeholder.data);
  }
  return op;
}

AsyncOp CopyAsync(uint64_t stream, uint64_t thread, acl::v1::CopyRequest copy) {
  AsyncOp op = OpOn(stream, thread);
  *op.mutable_copy() = std::move(copy);
  return op;
}

AsyncOp MemsetAsync(uint64_t stream, uint64_t thread, const acld::MemsetRequest& memset) {
  AsyncOp op = OpOn(stream, thread);
  SetMemset(memset, *op.mutable_memset());
  return op;
}

AsyncOp ReduceAsync(uint64_t stream, uint64_t thread, const acld::ReduceRequest& reduce) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::ReduceRequest& proto = *op.mutable_reduce();
  proto.set_device_dst(reduce.device_dst);
  proto.set_device_src(reduce.device_src);
  proto.set_count(reduce.count);
  proto.set_kind(reduce.kind);
  proto.set_data_type(reduce.data_type);
  return op;
}

AsyncOp ValueWaitAsync(uint64_t stream, uint64_t thread, const acld::ValueWaitRequest& wait) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::ValueWait& proto = *op.mutable_wait_value();
  proto.set_address(wait.address);
  proto.set_value(wait.value);
  proto.set_flag(wait.flag);
  return op;
}

AsyncOp OverflowAsync(uint64_t stream, uint64_t thread, const acld::OverflowRequest& overflow) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::OverflowOp& proto = *op.mutable_overflow();
  switch (overflow.kind) {
    case acld::OverflowRequest::Kind::kSwitchOn:
      proto.set_kind(acl::v1::OverflowOp::SWITCH_ON);
      break;
    case acld::OverflowRequest::Kind::kSwitchOff:
      proto.set_kind(acl::v1::OverflowOp::SWITCH_OFF);
      break;
    case acld::OverflowRequest::Kind::kCopyStatus:
      proto.set_kind(acl::v1::OverflowOp::COPY_STATUS);
      break;
    case acld::OverflowRequest::Kind::kClearStatus:
      proto.set_kind(acl::v1::OverflowOp::CLEAR_STATUS);
      break;
  }
  proto.set_device_dst(overflow.device_dst);
  return op;
}

namespace {
void SetRandomParameter(const acld::RandomParameter& parameter, acl::v1::RandomParameter& proto) {
  proto.set_at_device(parameter.at_device);
  proto.set_value(parameter.value);
  proto.set_size(parameter.size);
}
}  // namespace

AsyncOp RandomAsync(uint64_t stream, uint64_t thread, const acld::RandomRequest& random) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::RandomRequest& proto = *op.mutable_random();
  proto.set_function(random.function);
  proto.set_data_type(random.data_type);
  proto.set_device_result(random.device_result);
  proto.set_device_counter(random.device_counter);
  proto.set_device_workspace(random.device_workspace);
  SetRandomParameter(random.seed, *proto.mutable_seed());
  SetRandomParameter(random.count, *proto.mutable_count());
  SetRandomParameter(random.first, *proto.mutable_first());
  SetRandomParameter(random.second, *proto.mutable_second());
  return op;
}

AsyncOp RecordEvent(uint64_t stream, uint64_t thread, uint64_t event) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_record_event()->set_event(event);
  return op;
}

AsyncOp ResetEvent(uint64_t stream, uint64_t thread, uint64_t event) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_reset_event()->set_event(event);
  return op;
}

AsyncOp RecordNotify(uint64_t stream, uint64_t thread, uint64_t notify) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_record_notify()->set_notify(notify);
  return op;
}

AsyncOp WaitNotify(uint64_t stream, uint64_t thread, uint64_t notify, uint32_t timeout_s) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_wait_notify()->set_notify(notify);
  op.mutable_wait_notify()->set_timeout_s(timeout_s);
  return op;
}

AsyncOp WaitEvent(uint64_t stream, uint64_t thread, uint64_t event) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_wait_event()->set_event(event);
  return op;
}

AsyncOp HostCallback(uint64_t stream, uint64_t thread, uint64_t callback_id, bool block) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_host_callback()->set_callback_id(callback_id);
  op.mutable_host_callback()->set_block(block);
  return op;
}

ClientMessage CallbackDone(uint64_t callback_id) {
  ClientMessage done;
  done.mutable_callback_done()->set_callback_id(callback_id);
  return done;
}

ClientMessage ClientFeatures() {
  ClientMessage features;
  features.mutable_client_features()->set_revocation_notices(true);
  return features;
}

ClientMessage RevocationSeen(uint64_t notice) {
  ClientMessage seen;
  seen.mutable_revocation_seen()->set_notice(notice);
  return seen;
}

}  // namespace acl_client::codec
