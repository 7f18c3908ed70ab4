#include "tools/aclctl/json_printer.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace aclctl {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendString(const std::string& text, std::string& out) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void AppendMessage(const Message& message, std::string& out);

// One value of `field` (element `index` when repeated, -1 otherwise).
void AppendValue(const Message& message, const FieldDescriptor* field, int index,
                 std::string& out) {
  const Reflection* r = message.GetReflection();
  const bool rep = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      absl::StrAppend(
          &out, rep ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field))
                 ? "true"
                 : "false";
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      AppendString(
          (rep ? r->GetRepeatedEnum(message, field, index) : r->GetEnum(message, field))->name(),
          out);
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      AppendString(rep ? r->GetRepeatedString(message, field, index) : r->GetString(message, field),
                   out);
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      AppendMessage(
          rep ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field), out);
      break;
  }
}

// A map field is a repeated entry message {key, value}: print it as an object.
void AppendMap(const Message& message, const FieldDescriptor* field, std::string& out) {
  const Reflection* r = message.GetReflection();
  out += '{';
  for (int i = 0; i < r->FieldSize(message, field); ++i) {
    const Message& entry = r->GetRepeatedMessage(message, field, i);
    const FieldDescriptor* key = entry.GetDescriptor()->FindFieldByNumber(1);
    std::string key_text;
    AppendValue(entry, key, -1, key_text);
    if (key_text.empty() || key_text[0] != '"') key_text = absl::StrCat("\"", key_text, "\"");
    absl::StrAppend(&out, i ? "," : "", key_text, ":");
    AppendValue(entry, entry.GetDescriptor()->FindFieldByNumber(2), -1, out);
  }
  out += '}';
}

void AppendMessage(const Message& message, std::string& out) {
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  out += '{';
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    absl::StrAppend(&out, f ? "," : "", "\"", field->name(), "\":");
    if (field->is_map()) {
      AppendMap(message, field, out);
    } else if (field->is_repeated()) {
      out += '[';
      for (int i = 0; i < message.GetReflection()->FieldSize(message, field); ++i) {
        if (i) out += ',';
        AppendValue(message, field, i, out);
      }
      out += ']';
    } else {
      AppendValue(message, field, -1, out);
    }
  }
  out += '}';
}

}  // namespace

std::string ToJson(const Message& message) {
  std::string out;
  AppendMessage(message, out);
  return out;
}

}  // namespace aclctl
