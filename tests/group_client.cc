// A client process for the quota group tests (quota_group_integration_test.cc).
//
//   group_client hold DEVICE BYTES [STREAMS]
//       aclInit; prints "devices N" (what aclrtGetDeviceCount says), "set CODE MESSAGE" for
//       aclrtSetDevice(DEVICE), "malloc CODE MESSAGE" for aclrtMalloc(BYTES) on it,
//       "meminfo FREE TOTAL" (aclrtGetMemInfo) and
//       "stream CODE MESSAGE" for each of STREAMS aclrtCreateStream, then "ready"; holds
//       all of it until a line arrives on stdin, then lets go and finalizes
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace {

void Report(const char* what, aclError code) {
  const char* message = code != ACL_SUCCESS ? aclGetRecentErrMsg() : nullptr;
  std::printf("%s %d %s\n", what, code, message != nullptr ? message : "");
  std::fflush(stdout);
}

int Hold(int32_t device, size_t bytes, int streams) {
  const aclError init = aclInit(nullptr);
  if (init != ACL_SUCCESS) {
    Report("init", init);
    return 1;
  }
  uint32_t count = 0;
  const aclError counted = aclrtGetDeviceCount(&count);
  std::printf("devices %u\n", counted == ACL_SUCCESS ? count : 0);
  const aclError set = aclrtSetDevice(device);
  Report("set", set);
  void* memory = nullptr;
  if (set == ACL_SUCCESS) {
    Report("malloc", aclrtMalloc(&memory, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    size_t free = 0;
    size_t total = 0;
    if (aclrtGetMemInfo(ACL_HBM_MEM, &free, &total) == ACL_SUCCESS) {
      std::printf("meminfo %zu %zu\n", free, total);
    }
  }
  std::vector<aclrtStream> created;
  for (int i = 0; i < streams && set == ACL_SUCCESS; ++i) {
    aclrtStream stream = nullptr;
    const aclError code = aclrtCreateStream(&stream);
    Report("stream", code);
    if (code == ACL_SUCCESS) created.push_back(stream);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  for (aclrtStream stream : created) aclrtDestroyStream(stream);
  if (memory != nullptr) aclrtFree(memory);
  aclFinalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 4 || argc == 5) && std::string(argv[1]) == "hold") {
    return Hold(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10),
                argc == 5 ? std::atoi(argv[4]) : 0);
  }
  std::fprintf(stderr, "usage: %s hold DEVICE BYTES [STREAMS]\n", argv[0]);
  return 2;
}
