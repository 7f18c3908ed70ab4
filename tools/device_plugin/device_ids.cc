#include "tools/device_plugin/device_ids.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace acld::device_plugin {
namespace {

constexpr absl::string_view kDevicePrefix = "npu-";
constexpr absl::string_view kSliceInfix = "-slice-";

// A decimal number in [0, max] written without a sign or leading zeros, so
// that every unit has exactly one spelling (IDs are compared as strings).
std::optional<int32_t> ParseCanonicalNumber(absl::string_view text, int32_t max) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0 || value > max) return std::nullopt;
  return static_cast<int32_t>(value);
}

}  // namespace

std::string FormatUnitId(const UnitId& unit) {
  if (!unit.slice.has_value()) return absl::StrCat(kDevicePrefix, unit.device);
  return absl::StrCat(kDevicePrefix, unit.device, kSliceInfix, *unit.slice);
}

std::optional<UnitId> ParseUnitId(absl::string_view text, ResourceKind kind) {
  if (!absl::ConsumePrefix(&text, kDevicePrefix)) return std::nullopt;
  const size_t infix = text.find(kSliceInfix);
  if (kind == ResourceKind::kWholeDevice) {
    if (infix != absl::string_view::npos) return std::nullopt;
    const std::optional<int32_t> device = ParseCanonicalNumber(text, kMaxDeviceId);
    if (!device.has_value()) return std::nullopt;
    return UnitId{*device, std::nullopt};
  }
  if (infix == absl::string_view::npos) return std::nullopt;
  const std::optional<int32_t> device = ParseCanonicalNumber(text.substr(0, infix), kMaxDeviceId);
  const std::optional<int32_t> slice =
      ParseCanonicalNumber(text.substr(infix + kSliceInfix.size()), kMaxSlicesPerDevice - 1);
  if (!device.has_value() || !slice.has_value()) return std::nullopt;
  return UnitId{*device, *slice};
}

std::string EncodeUnits(const std::vector<UnitId>& units) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < units.size()) {
    const int32_t device = units[i].device;
    if (!units[i].slice.has_value()) {
      parts.push_back(absl::StrCat(device));
      ++i;
      continue;
    }
    std::vector<std::string> ranges;
    while (i < units.size() && units[i].device == device && units[i].slice.has_value()) {
      const int32_t first = *units[i].slice;
      int32_t last = first;
      ++i;
      while (i < units.size() && units[i].device == device && units[i].slice == last + 1) {
        ++last;
        ++i;
      }
      ranges.push_back(first == last ? absl::StrCat(first) : absl::StrCat(first, "-", last));
    }
    parts.push_back(absl::StrCat(device, ":", absl::StrJoin(ranges, ".")));
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::vector<UnitId>> DecodeUnits(absl::string_view text, ResourceKind kind,
                                                size_t max_units) {
  std::vector<UnitId> units;
  if (text.empty()) return units;
  auto malformed = [&text](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed device-ids label (", why, "): ", text.substr(0, 64)));
  };
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if (kind == ResourceKind::kWholeDevice) {
      const std::optional<int32_t> device = ParseCanonicalNumber(part, kMaxDeviceId);
      if (!device.has_value()) return malformed("device number");
      if (units.size() >= max_units) return malformed("too many units");
      units.push_back(UnitId{*device, std::nullopt});
      continue;
    }
    const std::vector<absl::string_view> device_and_ranges = absl::StrSplit(part, ':');
    if (device_and_ranges.size() != 2) return malformed("expected DEVICE:RANGES");
    const std::optional<int32_t> device = ParseCanonicalNumber(device_and_ranges[0], kMaxDeviceId);
    if (!device.has_value()) return malformed("device number");
    for (absl::string_view range : absl::StrSplit(device_and_ranges[1], '.')) {
      const std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
      if (ends.empty() || ends.size() > 2) return malformed("range");
      const std::optional<int32_t> first = ParseCanonicalNumber(ends[0], kMaxSlicesPerDevice - 1);
      const std::optional<int32_t> last =
          ends.size() == 2 ? ParseCanonicalNumber(ends[1], kMaxSlicesPerDevice - 1) : first;
      if (!first.has_value() || !last.has_value() || *last < *first) return malformed("range");
      if (units.size() + (*last - *first + 1) > max_units) return malformed("too many units");
      for (int32_t slice = *first; slice <= *last; ++slice) units.push_back(UnitId{*device, slice});
    }
  }
  std::sort(units.begin(), units.end());
  if (std::adjacent_find(units.begin(), units.end()) != units.end()) {
    return malformed("a unit twice");
  }
  return units;
}

}  // namespace acld::device_plugin
