// Prints a protobuf message as JSON for `aclctl --json`.
//
// Unlike protobuf's JsonPrint, 64-bit integers are printed as JSON numbers
// (operators feed them to jq and scripts, which expect numbers), and every
// field is present even when it holds its default value.
#ifndef ACLD_TOOLS_ACLCTL_JSON_PRINTER_H_
#define ACLD_TOOLS_ACLCTL_JSON_PRINTER_H_

#include <string>

#include "google/protobuf/message.h"

namespace aclctl {

std::string ToJson(const google::protobuf::Message& message);

}  // namespace aclctl

#endif  // ACLD_TOOLS_ACLCTL_JSON_PRINTER_H_
