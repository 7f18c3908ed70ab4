#include "daemon/server/message_shape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace acld::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

constexpr size_t kSmallRequestAllowance = 64 << 10;
constexpr size_t kBytesPerNestedMessage = 64;
// Deeper than any of our messages nest (the parser's own limit is 100).
constexpr int kMaxDepth = 32;

enum class Count { kWithin, kOver, kTooDeep };

// Counts the messages nested in what is left of `input` (a `type`, up to its
// limit) into `count`, stopping once it passes `allowance`. Each step reads
// at least one byte or ends the count, so the pass is linear in the bytes.
Count CountNested(CodedInputStream& input, const Descriptor& type, size_t allowance,
                  size_t& count, int depth) {
  if (depth > kMaxDepth) return Count::kTooDeep;
  while (true) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) return Count::kWithin;  // the end, or malformed: the parser decides
    const FieldDescriptor* field = type.FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    const bool nested = field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE &&
                        WireFormatLite::GetTagWireType(tag) ==
                            WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (!nested) {
      if (!WireFormatLite::SkipField(&input, tag)) return Count::kWithin;
      continue;
    }
    uint32_t length = 0;
    if (!input.ReadVarint32(&length) || length > static_cast<uint32_t>(input.BytesUntilLimit())) {
      return Count::kWithin;  // malformed: the parser refuses it
    }
    if (++count > allowance) return Count::kOver;
    const CodedInputStream::Limit outer = input.PushLimit(static_cast<int>(length));
    const Count inner = CountNested(input, *field->message_type(), allowance, count, depth + 1);
    if (inner != Count::kWithin) return inner;
    input.PopLimit(outer);
  }
}

}  // namespace

size_t NestedMessageAllowance(size_t bytes) {
  return kSmallRequestAllowance + bytes / kBytesPerNestedMessage;
}

absl::Status CheckNestedMessages(absl::string_view bytes, const Descriptor& type) {
  CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                         static_cast<int>(bytes.size()));
  input.PushLimit(static_cast<int>(bytes.size()));  // what BytesUntilLimit measures
  const size_t allowance = NestedMessageAllowance(bytes.size());
  size_t count = 0;
  switch (CountNested(input, type, allowance, count, 0)) {
    case Count::kWithin:
      return absl::OkStatus();
    case Count::kOver:
      return absl::InvalidArgumentError(
          absl::StrCat("a ", type.name(), " of ", bytes.size(), " bytes nests more than ",
                       allowance, " messages"));
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
