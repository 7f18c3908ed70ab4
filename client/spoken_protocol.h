// The runtime protocol version this libascendcl speaks (proto/acl/protocol.h).
//
// The test build of the previous protocol's client
// (//client:libascendcl_previous_protocol.so, defining
// ACLD_CLIENT_PREVIOUS_PROTOCOL) speaks the version before: it says so when it
// opens its session, and hands its memory over as those clients did (sealed
// for good, pages not written: sealed_memfd.cc), so that tests run a client
// one version older against this acld (docs/operations.md, upgrades).
#ifndef ACLD_CLIENT_SPOKEN_PROTOCOL_H_
#define ACLD_CLIENT_SPOKEN_PROTOCOL_H_

#include <cstdint>

#include "proto/acl/protocol.h"

namespace acl_client {

#ifdef ACLD_CLIENT_PREVIOUS_PROTOCOL
inline constexpr uint32_t kSpokenProtocolVersion = acld::kProtocolVersion - 1;
#else
inline constexpr uint32_t kSpokenProtocolVersion = acld::kProtocolVersion;
#endif
static_assert(kSpokenProtocolVersion >= acld::kDirectSessionProtocolVersion,
              "sessions open on the identity socket");

}  // namespace acl_client

#endif  // ACLD_CLIENT_SPOKEN_PROTOCOL_H_
