#include "tools/aclctl/table.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace aclctl {

std::string Table::Render() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrFormat("%d B", bytes)
                   : absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

std::string CountOfLimit(uint64_t use, uint64_t limit, uint64_t closing) {
  return absl::StrCat(use, closing > 0 ? absl::StrCat("+", closing) : "", "/",
                      limit == 0 ? "none" : absl::StrCat(limit));
}

std::string BytesOfLimit(uint64_t bytes, uint64_t limit) {
  return absl::StrCat(HumanBytes(bytes), "/", limit == 0 ? "none" : HumanBytes(limit));
}

}  // namespace aclctl
