// Device ids in one session's messages, renumbered between the session's
// view (daemon/core/device_view.h: a quota group's devices from 0) and the
// host's, at the one place requests enter and replies leave the session
// handler.
//
// The fields holding a device id are found by name in the message
// descriptors (`device_id`, `default_device`), so a new call that carries a
// device is renumbered without being listed anywhere; messages that cannot
// hold one (launch batches among them) are not walked at all.
#ifndef ACLD_DAEMON_SERVER_DEVICE_RENUMBERING_H_
#define ACLD_DAEMON_SERVER_DEVICE_RENUMBERING_H_

#include "absl/status/status.h"
#include "daemon/core/device_view.h"
#include "google/protobuf/message.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class DeviceRenumbering {
 public:
  explicit DeviceRenumbering(DeviceView view) : view_(std::move(view)) {}

  const DeviceView& view() const { return view_; }
  // Whether anything needs renumbering (the session sees a group's devices).
  bool active() const { return !view_.is_host(); }

  // Whether `request` holds a device id (then it needs ToHost).
  static bool CarriesDevice(const acl::v1::ClientMessage& request);

  // The host's ids for `message`'s device ids; an id outside the view fails
  // with ACL_ERROR_RT_INVALID_DEVICEID (and `message` is left part done).
  absl::Status ToHost(google::protobuf::Message& message) const;
  // The session's ids for `message`'s host device ids; a device outside the
  // view (something shared from another group's device) fails with
  // ACL_ERROR_RT_INVALID_DEVICEID.
  absl::Status ToSession(google::protobuf::Message& message) const;

 private:
  enum class Direction { kToHost, kToSession };
  absl::Status Walk(google::protobuf::Message& message, Direction direction) const;

  DeviceView view_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_DEVICE_RENUMBERING_H_
