// How much a client's serialized request would make protobuf allocate, told
// without parsing it.
//
// Protobuf's parser makes an object of every nested message, and keeps every
// field it does not know (and every group) as an entry of its own, so a
// request of nothing but empty ones (two bytes each: an AsyncBatch of empty
// operations) costs its parser tens of times its own size in memory and
// seconds of CPU: 64 MiB of them took 6.6 s and 2 GiB here. The wire format
// says how many there are in one pass over the bytes, so acld counts them
// first and refuses a request with more than any client of ours can send.
#ifndef ACLD_DAEMON_SERVER_MESSAGE_SHAPE_H_
#define ACLD_DAEMON_SERVER_MESSAGE_SHAPE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace acld::server {

// The most allocating fields (nested messages, unknown fields, groups,
// elements of repeated strings) one request may hold: a batch of as many
// launches as acld accepts, each with as many placeholders as a launch may
// carry, and room for the rest.
size_t NestedMessageAllowance();

// OK when `bytes`, a serialized `type`, holds at most NestedMessageAllowance()
// allocating fields, nested ones included. Malformed bytes are left to the
// parser to refuse.
absl::Status CheckNestedMessages(absl::string_view bytes, const google::protobuf::Descriptor& type);

// Parses a client's `bytes` into `message` once CheckNestedMessages allows
// them: how both carriers (the session stream, the shared-memory channel)
// read a request. InvalidArgument when refused or malformed.
absl::Status ParseClientBytes(absl::string_view bytes, google::protobuf::Message& message);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_MESSAGE_SHAPE_H_
