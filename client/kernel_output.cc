#include "client/kernel_output.h"

#include <cstdio>

namespace acl_client {

void PrintKernelOutput(absl::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace acl_client
