// Left-aligned text columns for aclctl's human output.
#ifndef ACLD_TOOLS_ACLCTL_TABLE_H_
#define ACLD_TOOLS_ACLCTL_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace aclctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// 4294967296 -> "4.0 GiB".
std::string HumanBytes(uint64_t bytes);

// A use beside its limit (0: no limit): (3, 4096) -> "3/4096", (3, 0) ->
// "3/none"; `closing` (streams still finishing) shows as (3, 4096, 1) -> "3+1/4096".
std::string CountOfLimit(uint64_t use, uint64_t limit, uint64_t closing = 0);
// (4096, 0) -> "4.0 KiB/none", (512, 1048576) -> "512 B/1.0 MiB".
std::string BytesOfLimit(uint64_t bytes, uint64_t limit);

}  // namespace aclctl

#endif  // ACLD_TOOLS_ACLCTL_TABLE_H_
