#include "client/process_info.h"

#include <fstream>
#include <iterator>

namespace acl_client {

std::string ProcessCommandLine() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::string line((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!line.empty() && line.back() == '\0') line.pop_back();
  for (char& c : line) {
    if (c == '\0') c = ' ';
  }
  constexpr size_t kMaxLength = 256;
  if (line.size() > kMaxLength) line.resize(kMaxLength);
  return line;
}

}  // namespace acl_client
