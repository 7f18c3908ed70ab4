#include "daemon/server/device_renumbering.h"

#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_base.h"
#include "google/protobuf/descriptor.h"
#include "proto/acl/acl_status.h"

namespace acld::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

bool IsDeviceField(const FieldDescriptor& field) {
  return field.cpp_type() == FieldDescriptor::CPPTYPE_INT32 && !field.is_repeated() &&
         (field.name() == "device_id" || field.name() == "default_device");
}

// Whether messages of `type` can hold a device id, directly or in a field's
// message; worked out once per type from the descriptors.
bool MayHoldDevice(const Descriptor* type) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* known ABSL_GUARDED_BY(mu) = new std::map<const Descriptor*, bool>();
  {
    absl::MutexLock lock(&mu);
    auto it = known->find(type);
    if (it != known->end()) return it->second;
  }
  // Depth first with a visited set (message types may refer to themselves).
  std::set<const Descriptor*> visiting;
  std::function<bool(const Descriptor*)> holds = [&](const Descriptor* message) {
    if (!visiting.insert(message).second) return false;
    for (int i = 0; i < message->field_count(); ++i) {
      const FieldDescriptor& field = *message->field(i);
      if (IsDeviceField(field)) return true;
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && holds(field.message_type())) {
        return true;
      }
    }
    return false;
  };
  const bool result = holds(type);
  absl::MutexLock lock(&mu);
  (*known)[type] = result;
  return result;
}

}  // namespace

bool DeviceRenumbering::CarriesDevice(const acl::v1::ClientMessage& request) {
  const google::protobuf::OneofDescriptor* body =
      acl::v1::ClientMessage::descriptor()->FindOneofByName("body");
  const FieldDescriptor* field =
      request.GetReflection()->GetOneofFieldDescriptor(request, body);
  return field != nullptr && (IsDeviceField(*field) ||
                              (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
                               MayHoldDevice(field->message_type())));
}

absl::Status DeviceRenumbering::ToHost(google::protobuf::Message& message) const {
  if (!active()) return absl::OkStatus();
  return Walk(message, Direction::kToHost);
}

absl::Status DeviceRenumbering::ToSession(google::protobuf::Message& message) const {
  if (!active()) return absl::OkStatus();
  return Walk(message, Direction::kToSession);
}

absl::Status DeviceRenumbering::Walk(google::protobuf::Message& message,
                                     Direction direction) const {
  const Descriptor* type = message.GetDescriptor();
  if (!MayHoldDevice(type)) return absl::OkStatus();
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor& field = *type->field(i);
    // A device id of 0 is a proto3 default (unset): every field is looked
    // at, not only those set, but only the present member of a oneof.
    if (field.containing_oneof() != nullptr && !reflection.HasField(message, &field)) continue;
    if (IsDeviceField(field)) {
      const int32_t device = reflection.GetInt32(message, &field);
      if (direction == Direction::kToHost) {
        absl::StatusOr<int32_t> host = view_.ToHost(device);
        if (!host.ok()) return host.status();
        reflection.SetInt32(&message, &field, *host);
      } else {
        std::optional<int32_t> own = view_.ToSession(device);
        if (!own.has_value()) {
          return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                           "it lives on a device outside this process's quota group");
        }
        reflection.SetInt32(&message, &field, *own);
      }
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
               MayHoldDevice(field.message_type())) {
      if (field.is_repeated()) {
        for (int j = 0; j < reflection.FieldSize(message, &field); ++j) {
          absl::Status status =
              Walk(*reflection.MutableRepeatedMessage(&message, &field, j), direction);
          if (!status.ok()) return status;
        }
      } else if (reflection.HasField(message, &field)) {
        absl::Status status = Walk(*reflection.MutableMessage(&message, &field), direction);
        if (!status.ok()) return status;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace acld::server
