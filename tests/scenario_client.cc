// A CANN-style client process driven by the integration tests (and the demo).
//
//   scenario_client seed_lifecycle      the seed plugin-lifecycle sample
//   scenario_client hold N [CONFIG]     aclInit(CONFIG) N times, print "ready", wait
//                                       for a line on stdin, then aclFinalizeReference
//                                       N times
//   scenario_client concurrent T        T threads aclInit, then T threads
//                                       aclFinalizeReference, concurrently
//   scenario_client no_daemon           every call fails fast with SOCKET_CLOSE
//   scenario_client fork                a fork() child's calls fail with SOCKET_CLOSE
//                                       saying why; its exit does not hang; the
//                                       parent's session goes on
//   scenario_client fork_and_stay       opens a session, forks a child that stays
//                                       (at most 30 s) and prints "child <pid>";
//                                       then waits (the test kills it: the child
//                                       must not keep its session open)
//   scenario_client stages              synchronous calls only, then an asynchronous
//                                       operation, then a host func; prints "sync",
//                                       "async", "callbacks" after each and waits for
//                                       a line on stdin (the test looks at its threads)
//
// Exits 0 when every check of the scenario held; prints "FAIL: ..." otherwise.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"

namespace {

int failures = 0;
// Set in the child of the fork scenario: the parent's threads did not come
// along, so what only their stacks pointed to looks leaked to LeakSanitizer
// (under --config=asan), and it is not the child's.
bool forked_child = false;

void Check(bool condition, const std::string& what) {
  if (!condition) {
    std::printf("FAIL: %s\n", what.c_str());
    std::fflush(stdout);
    ++failures;
  }
}

void CheckCode(aclError got, aclError want, const std::string& call) {
  if (got != want) {
    const char* message = aclGetRecentErrMsg();
    Check(false, call + " returned " + std::to_string(got) + ", want " + std::to_string(want) +
                     " (" + (message ? message : "no message") + ")");
  }
}

// --- the seed sample: plugins follow the ACL lifecycle through callbacks ---

std::atomic<int> init_valid{0}, init_cancelled{0}, finalize_valid{0}, finalize_cancelled{0};
std::string init_config_seen;

aclError PluginInit(const char* config, size_t len, void* user_data) {
  init_config_seen.assign(config, len);
  ++*static_cast<std::atomic<int>*>(user_data);
  return ACL_SUCCESS;
}
aclError CancelledPluginInit(const char*, size_t, void*) {
  ++init_cancelled;
  return ACL_SUCCESS;
}
aclError PluginFinalize(void* user_data) {
  ++*static_cast<std::atomic<int>*>(user_data);
  return ACL_SUCCESS;
}
aclError CancelledPluginFinalize(void*) {
  ++finalize_cancelled;
  return ACL_SUCCESS;
}

int SeedLifecycle() {
  CheckCode(aclInitCallbackRegister(ACL_REG_TYPE_OTHER, PluginInit, &init_valid), ACL_SUCCESS,
            "aclInitCallbackRegister(valid)");
  CheckCode(aclInitCallbackRegister(ACL_REG_TYPE_OTHER, CancelledPluginInit, nullptr), ACL_SUCCESS,
            "aclInitCallbackRegister(cancelled)");
  CheckCode(aclInitCallbackUnRegister(ACL_REG_TYPE_OTHER, CancelledPluginInit), ACL_SUCCESS,
            "aclInitCallbackUnRegister");
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");

  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  int32_t device = -1;
  CheckCode(aclrtGetDevice(&device), ACL_SUCCESS, "aclrtGetDevice");
  Check(device == 0, "current device is 0");

  CheckCode(aclFinalizeCallbackRegister(ACL_REG_TYPE_OTHER, PluginFinalize, &finalize_valid),
            ACL_SUCCESS, "aclFinalizeCallbackRegister(valid)");
  CheckCode(aclFinalizeCallbackRegister(ACL_REG_TYPE_OTHER, CancelledPluginFinalize, nullptr),
            ACL_SUCCESS, "aclFinalizeCallbackRegister(cancelled)");
  CheckCode(aclFinalizeCallbackUnRegister(ACL_REG_TYPE_OTHER, CancelledPluginFinalize), ACL_SUCCESS,
            "aclFinalizeCallbackUnRegister");

  CheckCode(aclrtResetDeviceForce(0), ACL_SUCCESS, "aclrtResetDeviceForce(0)");
  uint64_t ref_count = 1;
  CheckCode(aclFinalizeReference(&ref_count), ACL_SUCCESS, "aclFinalizeReference");
  // The plugins unregister on their way out, after the runtime is gone.
  CheckCode(aclFinalizeCallbackUnRegister(ACL_REG_TYPE_OTHER, PluginFinalize), ACL_SUCCESS,
            "aclFinalizeCallbackUnRegister(valid) after finalize");
  CheckCode(aclInitCallbackUnRegister(ACL_REG_TYPE_OTHER, PluginInit), ACL_SUCCESS,
            "aclInitCallbackUnRegister(valid) after finalize");
  Check(ref_count == 0, "reference count is 0 at the end");
  Check(init_valid == 1, "the valid init callback ran once");
  Check(init_cancelled == 0, "the cancelled init callback never ran");
  Check(finalize_valid == 1, "the valid finalize callback ran once");
  Check(finalize_cancelled == 0, "the cancelled finalize callback never ran");
  CheckCode(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "aclFinalize after the last reference");
  std::printf(
      "seed_lifecycle init_valid=%d init_cancelled=%d finalize_valid=%d "
      "finalize_cancelled=%d ref_count=%llu\n",
      init_valid.load(), init_cancelled.load(), finalize_valid.load(), finalize_cancelled.load(),
      static_cast<unsigned long long>(ref_count));
  return failures == 0 ? 0 : 1;
}

// --- hold: a process holding N references until told to let go ---

aclError AnnounceInit(const char*, size_t, void*) {
  std::printf("plugin init callback ran in pid %d\n", static_cast<int>(getpid()));
  return ACL_SUCCESS;
}

aclError AnnounceFinalize(void*) {
  std::printf("plugin finalize callback ran in pid %d\n", static_cast<int>(getpid()));
  return ACL_SUCCESS;
}

int Hold(int references, const char* config_path) {
  CheckCode(aclInitCallbackRegister(ACL_REG_TYPE_OTHER, AnnounceInit, nullptr), ACL_SUCCESS,
            "aclInitCallbackRegister");
  CheckCode(aclFinalizeCallbackRegister(ACL_REG_TYPE_OTHER, AnnounceFinalize, nullptr), ACL_SUCCESS,
            "aclFinalizeCallbackRegister");
  CheckCode(aclInit(config_path), ACL_SUCCESS, "aclInit");
  for (int i = 1; i < references; ++i) {
    CheckCode(aclInit(config_path), ACL_ERROR_REPEAT_INITIALIZE, "repeated aclInit");
  }
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  std::printf("ready pid=%d references=%d\n", static_cast<int>(getpid()), references);
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  std::string codes, first_message;
  uint64_t ref_count = 0;
  for (int i = 0; i < references; ++i) {
    const aclError code = aclFinalizeReference(&ref_count);
    codes += (i ? "," : "") + std::to_string(code);
    const char* message = code != ACL_SUCCESS ? aclGetRecentErrMsg() : nullptr;
    if (message != nullptr && first_message.empty()) first_message = message;
  }
  std::printf("released codes=%s ref_count=%llu\n", codes.c_str(),
              static_cast<unsigned long long>(ref_count));
  if (!first_message.empty()) std::printf("message: %s\n", first_message.c_str());
  return failures == 0 ? 0 : 1;
}

// --- concurrent: aclInit / aclFinalizeReference from many threads at once ---

std::atomic<int> concurrent_finalize_calls{0};

aclError CountFinalize(void*) {
  ++concurrent_finalize_calls;
  return ACL_SUCCESS;
}

int Concurrent(int threads) {
  CheckCode(aclFinalizeCallbackRegister(ACL_REG_TYPE_OTHER, CountFinalize, nullptr), ACL_SUCCESS,
            "aclFinalizeCallbackRegister");
  std::atomic<int> ok{0}, repeats{0}, other{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      const aclError code = aclInit(nullptr);
      (code == ACL_SUCCESS ? ok : code == ACL_ERROR_REPEAT_INITIALIZE ? repeats : other)++;
    });
  }
  for (auto& worker : workers) worker.join();
  workers.clear();
  Check(ok == 1 && repeats == threads - 1 && other == 0,
        "exactly one aclInit initializes, the others repeat");

  std::atomic<int> finalize_failures{0};
  std::atomic<int> saw_zero{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      uint64_t ref_count = 12345;
      if (aclFinalizeReference(&ref_count) != ACL_SUCCESS) ++finalize_failures;
      if (ref_count == 0) ++saw_zero;
    });
  }
  for (auto& worker : workers) worker.join();
  Check(finalize_failures == 0, "every aclFinalizeReference succeeds");
  Check(saw_zero == 1, "exactly one aclFinalizeReference reaches 0");
  Check(concurrent_finalize_calls == 1, "finalize callbacks ran exactly once");
  uint64_t ref_count = 7;
  CheckCode(aclFinalizeReference(&ref_count), ACL_ERROR_REPEAT_FINALIZE,
            "aclFinalizeReference after 0");
  Check(ref_count == 0, "refCount reports 0 after 0");
  std::printf("concurrent threads=%d finalize_callbacks=%d\n", threads,
              concurrent_finalize_calls.load());
  return failures == 0 ? 0 : 1;
}

// --- no_daemon: nothing listens; every call fails fast and says why ---

int NoDaemon() {
  const auto start = std::chrono::steady_clock::now();
  auto check_socket_close = [](aclError code, const char* call) {
    CheckCode(code, ACL_ERROR_RT_SOCKET_CLOSE, call);
    const char* message = aclGetRecentErrMsg();
    Check(message != nullptr && std::strstr(message, "ACLD_ADDRESS") != nullptr &&
              std::strstr(message, "acld") != nullptr,
          std::string(call) + " explains how to reach acld");
  };
  uint32_t count = 0;
  int32_t device = 0;
  uint64_t ref_count = 0;
  check_socket_close(aclInit(nullptr), "aclInit");
  check_socket_close(aclrtSetDevice(0), "aclrtSetDevice");
  check_socket_close(aclrtGetDevice(&device), "aclrtGetDevice");
  check_socket_close(aclrtGetDeviceCount(&count), "aclrtGetDeviceCount");
  check_socket_close(aclFinalizeReference(&ref_count), "aclFinalizeReference");
  check_socket_close(aclFinalize(), "aclFinalize");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Check(seconds < 5, "the calls fail fast");
  std::printf("no_daemon seconds=%.3f\n", seconds);
  return failures == 0 ? 0 : 1;
}

int Fork() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) {
    Check(false, "fork");
    return 1;
  }
  if (child == 0) {
    // The child's own check results travel in its exit code.
    bool right = true;
    aclrtStream other = nullptr;
    right &= aclrtCreateStream(&other) == ACL_ERROR_RT_SOCKET_CLOSE;
    const char* message = aclGetRecentErrMsg();
    right &= message != nullptr && std::strstr(message, "forked") != nullptr;
    right &= aclrtSynchronizeStream(stream) == ACL_ERROR_RT_SOCKET_CLOSE;
    void* memory = nullptr;
    right &= aclrtMalloc(&memory, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_RT_SOCKET_CLOSE;
    forked_child = true;
    std::exit(right ? 0 : 3);  // atexit handlers run: they must not touch the parent's session
  }
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 400 && reaped == 0; ++i) {
    reaped = waitpid(child, &status, WNOHANG);
    if (reaped == 0) usleep(50 * 1000);
  }
  if (reaped == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    Check(false, "the forked child exits within 20 s");
  } else {
    Check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the forked child's calls fail with SOCKET_CLOSE naming the fork (exit status " +
              std::to_string(status) + ")");
  }
  // The parent's session is untouched.
  void* memory = nullptr;
  CheckCode(aclrtMalloc(&memory, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "parent aclrtMalloc");
  CheckCode(aclrtMemsetAsync(memory, 64, 7, 64, stream), ACL_SUCCESS, "parent aclrtMemsetAsync");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "parent aclrtSynchronizeStream");
  CheckCode(aclrtFree(memory), ACL_SUCCESS, "parent aclrtFree");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtResetDevice(0), ACL_SUCCESS, "aclrtResetDevice");
  CheckCode(aclFinalize(), ACL_SUCCESS, "aclFinalize");
  return failures == 0 ? 0 : 1;
}

// --- stages: what each kind of use adds to the process's threads ---

void WaitForGo() {
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
}

std::atomic<int> host_funcs_run{0};
void CountHostFunc(void*) { ++host_funcs_run; }

int Stages() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtStreamStatus status = ACL_STREAM_STATUS_RESERVED;
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "aclrtStreamQuery");
  Check(status == ACL_STREAM_STATUS_COMPLETE, "an idle stream is complete");
  std::printf("sync\n");
  WaitForGo();
  void* device = nullptr;
  CheckCode(aclrtMalloc(&device, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemsetAsync(device, 4096, 7, 4096, stream), ACL_SUCCESS, "aclrtMemsetAsync");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  char host[4096] = {};
  CheckCode(aclrtMemcpy(host, sizeof(host), device, sizeof(host), ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "aclrtMemcpy");
  Check(host[0] == 7 && host[4095] == 7, "the memset reached the device");
  std::printf("async\n");
  WaitForGo();
  CheckCode(aclrtLaunchHostFunc(stream, CountHostFunc, nullptr), ACL_SUCCESS,
            "aclrtLaunchHostFunc");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  Check(host_funcs_run.load() == 1, "the host func ran once");
  std::printf("callbacks\n");
  WaitForGo();
  CheckCode(aclrtFree(device), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtResetDevice(0), ACL_SUCCESS, "aclrtResetDevice");
  CheckCode(aclFinalize(), ACL_SUCCESS, "aclFinalize");
  return failures == 0 ? 0 : 1;
}

}  // namespace

#ifdef __SANITIZE_ADDRESS__
// LeakSanitizer asks this before it checks for leaks at exit.
extern "C" int __lsan_is_turned_off() { return forked_child ? 1 : 0; }
#endif

int ForkAndStay() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice");
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) {
    Check(false, "fork");
    return 1;
  }
  if (child == 0) {
    forked_child = true;
    sleep(30);
    _exit(0);
  }
  std::cout << "child " << child << std::endl;
  sleep(30);
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int number = argc > 2 ? std::atoi(argv[2]) : 0;
  if (mode == "seed_lifecycle") return SeedLifecycle();
  if (mode == "hold" && number > 0) return Hold(number, argc > 3 ? argv[3] : nullptr);
  if (mode == "concurrent" && number > 0) return Concurrent(number);
  if (mode == "no_daemon") return NoDaemon();
  if (mode == "fork") return Fork();
  if (mode == "stages") return Stages();
  if (mode == "fork_and_stay") return ForkAndStay();
  std::fprintf(stderr,
               "usage: %s seed_lifecycle | hold N | concurrent T | no_daemon | fork | stages\n",
               argv[0]);
  return 2;
}
