// Turns one runtime-protocol request into a core call and its reply.
//
// The only place that knows both the proto messages and the core's API; the
// session stream (runtime_service.cc) only moves messages.
#ifndef ACLD_DAEMON_SERVER_REQUEST_DISPATCHER_H_
#define ACLD_DAEMON_SERVER_REQUEST_DISPATCHER_H_

#include "daemon/core/runtime.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

// Executes `request` for `session` and fills `reply`.
void DispatchRequest(Runtime& runtime, SessionId session, const acl::v1::ClientMessage& request,
                     acl::v1::Reply& reply);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_REQUEST_DISPATCHER_H_
