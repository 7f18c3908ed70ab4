// The stand-in vendor runtime (docs/architecture.md): acld's own runtime on
// its sim, in-process, whatever the environment says, so that the acl backend
// can be tested without an NPU. No gRPC or protobuf code is linked in: a
// second copy of the generated protocol code in the daemon's process would
// abort it.
#include "client/embedded_transport.h"
#include "client/transport_factory.h"
#include "hal/sim/sim_backend.h"

namespace acl_client {

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(CallbackDispatcher* callbacks,
                                                           const acld::InitSettings*) {
  return std::unique_ptr<Transport>(
      std::make_unique<EmbeddedTransport>(hal::sim::CreateSimBackend({}), callbacks));
}

}  // namespace acl_client
