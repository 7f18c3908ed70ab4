#include "hal/acl/device_numbers.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace hal::acl {

// The notifies CANN states for the SoC's product: Atlas A2 (Ascend910B1,
// B2, ...) and A3 (Ascend910_93*) 8192, Ascend 950 (Ascend950*,
// Ascend910_95*) 65535, Atlas 200I/500 A2 (Ascend310B*) 2048; Atlas training
// cards (Ascend910A, Ascend910ProB, a bare "Ascend910B"), inference cards
// (Ascend310P*) and any SoC not named here 1024, the fewest.
uint32_t NotifiesOfSoc(absl::string_view soc) {
  auto model_with_number = [&](absl::string_view prefix) {
    return absl::StartsWith(soc, prefix) && soc.size() > prefix.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(soc[prefix.size()]));
  };
  if (model_with_number("Ascend910B") || absl::StartsWith(soc, "Ascend910_93")) return 8192;
  if (absl::StartsWith(soc, "Ascend950") || absl::StartsWith(soc, "Ascend910_95")) return 65535;
  if (absl::StartsWith(soc, "Ascend310B")) return 2048;
  return 1024;
}

// Streams and events: what the vendor says it has left (the probe's default
// stream aside), less the two streams BringUp makes (its context's default
// stream, the report thread's control stream). When the vendor cannot tell
// (an older CANN, or an answer of 0, which cannot be right before acld made
// anything), the fewest CANN documents for any product: 512 streams (an
// Atlas 200I/500 A2) and 1023 events (an Atlas inference card). Notifies
// have no query: CANN states them per product, told apart by SoC name.
DeviceObjectLimits ProbeObjectLimits(const VendorApi& api, absl::string_view soc) {
  constexpr uint32_t kFewestStreams = 512;
  constexpr uint32_t kFewestEvents = 1023;
  constexpr uint32_t kOwnStreams = 2;  // device_context.h's, report_thread.h's
  auto ask = [](aclError (*query)(uint32_t*), uint32_t fallback) {
    uint32_t count = 0;
    if (query == nullptr || query(&count) != ACL_SUCCESS || count == 0) return fallback;
    return count;
  };
  const uint32_t streams = ask(api.aclrtGetStreamAvailableNum, kFewestStreams);
  return {streams > kOwnStreams ? streams - kOwnStreams : 1,
          ask(api.aclrtGetEventAvailNum, kFewestEvents), NotifiesOfSoc(soc)};
}

}  // namespace hal::acl
