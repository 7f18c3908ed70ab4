#include "tools/device_plugin/device_selection.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/device_plugin/device_ids.h"

namespace acld::device_plugin {
namespace {

absl::Status AddDevices(absl::string_view list, absl::string_view flag, std::set<int32_t>* out) {
  list = absl::StripAsciiWhitespace(list);
  if (list.empty() || list == "none") return absl::OkStatus();
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int32_t device = -1;
    if (!absl::SimpleAtoi(item, &device) || device < 0 || device > kMaxDeviceId) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", item,
                                                     "' is not a device id (0..", kMaxDeviceId,
                                                     ")"));
    }
    if (!out->insert(device).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " names device ", device, " twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceSelection> ParseDeviceSelection(absl::string_view whole,
                                                     absl::string_view sliced,
                                                     uint64_t slice_bytes) {
  DeviceSelection selection;
  selection.slice_bytes = slice_bytes;
  if (absl::StripAsciiWhitespace(whole) == kOtherDevices) {
    selection.whole_others = true;
  } else if (absl::Status status = AddDevices(whole, "whole_devices", &selection.whole);
             !status.ok()) {
    return status;
  }
  if (absl::Status status = AddDevices(sliced, "sliced_devices", &selection.sliced);
      !status.ok()) {
    return status;
  }
  for (int32_t device : selection.whole) {
    if (selection.sliced.count(device) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", device,
          " is in both --whole_devices and --sliced_devices: it would be sold twice"));
    }
  }
  if (selection.AdvertisesSlices() && slice_bytes == 0) {
    return absl::InvalidArgumentError("--sliced_devices needs --slice_bytes > 0");
  }
  if (!selection.AdvertisesWhole() && !selection.AdvertisesSlices()) {
    return absl::InvalidArgumentError(
        "nothing to advertise: --whole_devices and --sliced_devices are both empty");
  }
  return selection;
}

}  // namespace acld::device_plugin
