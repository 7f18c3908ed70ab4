// How this build of the client library reaches a runtime: libascendcl.so
// reads ACLD_ADDRESS (transport_factory.cc); the stand-in vendor runtime used
// to test the acl backend always runs its own sim in-process
// (standin_transport_factory.cc).
#ifndef ACLD_CLIENT_TRANSPORT_FACTORY_H_
#define ACLD_CLIENT_TRANSPORT_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client/callback_dispatcher.h"
#include "client/transport.h"

namespace acl_client {

// Where the client looks for acld when ACLD_ADDRESS is not set.
inline constexpr char kDefaultAddress[] = "unix:/run/acld/acld.sock";

// The session's transport; callbacks and task failures go to `callbacks`.
// `initialize` (if set): the Initialize a session that opens now sends as it
// opens, where the carrier can (RemoteTransport::Connect); Initialize with
// these settings then answers it.
absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(
    CallbackDispatcher* callbacks, const acld::InitSettings* initialize = nullptr);

}  // namespace acl_client

#endif  // ACLD_CLIENT_TRANSPORT_FACTORY_H_
