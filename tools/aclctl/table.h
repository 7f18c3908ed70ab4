// Left-aligned text columns for aclctl's human output.
#ifndef ACLD_TOOLS_ACLCTL_TABLE_H_
#define ACLD_TOOLS_ACLCTL_TABLE_H_

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

}  // namespace aclctl

#endif  // ACLD_TOOLS_ACLCTL_TABLE_H_
