#include "daemon/server/message_shape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto/acl/protocol.h"
#include "proto/acl/transport_types.h"

namespace acld::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

// Deeper than any of our messages nest (the parser's own limit is 100).
constexpr int kMaxDepth = 32;

enum class Count { kWithin, kOver, kTooDeep };

// Whether the parser makes an entry of its own for `tag` of `field`
// (nullptr: a field it does not know): a nested message, an unknown
// field or one of a wire type its field does not have, a group, or an
// element of a repeated string. Scalars and single strings only overwrite.
bool Allocates(const FieldDescriptor* field, uint32_t tag) {
  if (field == nullptr) return true;
  const auto wire = WireFormatLite::GetTagWireType(tag);
  switch (field->type()) {
    case FieldDescriptor::TYPE_MESSAGE:
    case FieldDescriptor::TYPE_GROUP:
      return true;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
      return wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || field->is_repeated();
    default:
      // A scalar: packed when repeated (its elements grow one array), else
      // kept as unknown; of another wire type, kept as unknown too.
      if (wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return !field->is_repeated();
      return wire != WireFormatLite::WireTypeForFieldType(
                         static_cast<WireFormatLite::FieldType>(field->type()));
  }
}

// Counts the allocating fields in what is left of `input` (a `type`, up to
// its limit or the end of its group) into `count`, stopping once it passes
// `allowance`. Each step reads at least one byte or ends the count, so the
// pass is linear in the bytes.
Count CountNested(CodedInputStream& input, const Descriptor* type, size_t allowance,
                  size_t& count, int depth) {
  if (depth > kMaxDepth) return Count::kTooDeep;
  while (true) {
    const uint32_t tag = input.ReadTag();
    // The end, a group's end, or malformed: the parser decides.
    if (tag == 0 || WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_END_GROUP) {
      return Count::kWithin;
    }
    // A group's fields (type nullptr) are all unknown ones.
    const FieldDescriptor* field =
        type == nullptr ? nullptr
                        : type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    if (Allocates(field, tag) && ++count > allowance) return Count::kOver;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_START_GROUP: {
        // Its fields are counted as unknown ones (proto3 has no groups).
        const Count inner = CountNested(input, nullptr, allowance, count, depth + 1);
        if (inner != Count::kWithin) return inner;
        continue;
      }
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
        if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE) {
          uint32_t length = 0;
          if (!input.ReadVarint32(&length) ||
              length > static_cast<uint32_t>(input.BytesUntilLimit())) {
            return Count::kWithin;  // malformed: the parser refuses it
          }
          const CodedInputStream::Limit outer = input.PushLimit(static_cast<int>(length));
          const Count inner =
              CountNested(input, field->message_type(), allowance, count, depth + 1);
          if (inner != Count::kWithin) return inner;
          input.PopLimit(outer);
          continue;
        }
        break;
      default:
        break;
    }
    if (!WireFormatLite::SkipField(&input, tag)) return Count::kWithin;
  }
}

}  // namespace

size_t NestedMessageAllowance() {
  // Per launch: its AsyncOp, LaunchFunction, CoreLimits and placeholders.
  constexpr size_t kPerLaunch = 3 + kMaxPlaceholders;
  constexpr size_t kForTheRest = 64 << 10;
  return static_cast<size_t>(kMaxBatchOpsAccepted) * kPerLaunch + kForTheRest;
}

absl::Status CheckNestedMessages(absl::string_view bytes, const Descriptor& type) {
  const size_t allowance = NestedMessageAllowance();
  // Every allocating field takes two bytes at least (a tag and a length or
  // value, a group's start and end): a request this small cannot pass the
  // allowance, and every call's request is, so it is not walked at all.
  if (bytes.size() / 2 <= allowance) return absl::OkStatus();
  CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                         static_cast<int>(bytes.size()));
  input.PushLimit(static_cast<int>(bytes.size()));  // what BytesUntilLimit measures
  size_t count = 0;
  switch (CountNested(input, &type, allowance, count, 0)) {
    case Count::kWithin:
      return absl::OkStatus();
    case Count::kOver:
      return absl::InvalidArgumentError(
          absl::StrCat("a ", type.name(), " of ", bytes.size(), " bytes holds more than ",
                       allowance, " nested messages and unknown fields"));
    case Count::kTooDeep:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("a ", type.name(), " nests messages more than ", kMaxDepth, " deep"));
}

absl::Status ParseClientBytes(absl::string_view bytes, google::protobuf::Message& message) {
  const absl::Status shape = CheckNestedMessages(bytes, *message.GetDescriptor());
  if (!shape.ok()) return shape;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", message.GetDescriptor()->name(), " of ", bytes.size(),
                     " bytes does not parse"));
  }
  return absl::OkStatus();
}

}  // namespace acld::server
