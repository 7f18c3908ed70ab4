// A client process for the tenant-limits tests (tenant_limits_test.cc).
//
//   tenant_client hold         aclInit + aclrtSetDevice(0); prints "init CODE MESSAGE",
//                              then "ready" when both worked; waits for a line on stdin
//   tenant_client init_expect CODE TEXT
//                              aclInit; exits 0 when it returned CODE with TEXT in
//                              aclGetRecentErrMsg() (or CODE 0 and aclrtSetDevice(0) worked)
//   tenant_client stall MIB N  N streams each owe this process a MIB MiB reply into
//                              pageable memory, due 0.5 s after it prints "stalling";
//                              then it stops itself (SIGSTOP), so the daemon cannot
//                              write them, and goes on only on SIGCONT
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "tests/check.h"

namespace {

using scenario::CheckCode;

int Hold() {
  const aclError code = aclInit(nullptr);
  const char* message = code != ACL_SUCCESS ? aclGetRecentErrMsg() : nullptr;
  std::printf("init %d %s\n", code, message != nullptr ? message : "");
  std::fflush(stdout);
  if (code != ACL_SUCCESS) return 0;
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  aclFinalize();
  return scenario::ExitCode();
}

int InitExpect(aclError expected, const std::string& text) {
  const aclError code = aclInit(nullptr);
  const char* message = code != ACL_SUCCESS ? aclGetRecentErrMsg() : nullptr;
  const std::string said = message != nullptr ? message : "";
  std::printf("init %d %s\n", code, said.c_str());
  if (code != expected || said.find(text) == std::string::npos) return 1;
  if (code == ACL_SUCCESS) {
    CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
    aclFinalize();
  }
  return scenario::ExitCode();
}

int Stall(size_t mib, int streams) {
  scenario::Setup();
  const size_t bytes = mib << 20;
  void* device = nullptr;
  CheckCode(aclrtMalloc(&device, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  aclrtContext context = nullptr;
  CheckCode(aclrtGetCurrentContext(&context), ACL_SUCCESS, "context");
  std::vector<std::thread> threads;
  for (int t = 0; t < streams; ++t) {
    threads.emplace_back([&] {
      aclrtSetCurrentContext(context);
      aclrtStream stream = nullptr;
      CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
      const uint64_t args[] = {scenario::Addr(device), 500000};  // reached in 0.5 s
      CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args, sizeof(args), stream), ACL_SUCCESS,
                "launch");
      std::vector<uint8_t> host(bytes);
      aclrtMemcpyAsync(host.data(), bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::printf("stalling\n");
  std::fflush(stdout);
  // Stops itself before the replies are due: a test that stops it after
  // reading the line could be too late on a loaded host (the process would
  // read its replies and exit). It goes on only on SIGCONT.
  raise(SIGSTOP);
  for (auto& thread : threads) thread.join();
  return scenario::ExitCode();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "hold") return Hold();
  if (mode == "init_expect" && argc > 3) return InitExpect(std::atoi(argv[2]), argv[3]);
  if (mode == "stall" && argc > 3) {
    return Stall(std::strtoul(argv[2], nullptr, 10), std::atoi(argv[3]));
  }
  std::fprintf(stderr, "usage: %s hold | init_expect CODE TEXT | stall MIB STREAMS\n", argv[0]);
  return 2;
}
