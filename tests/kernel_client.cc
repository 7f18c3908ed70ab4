// A client process of the kernel API (binaries, functions, argument lists,
// launches), in the daemon's mode or embedded:
//   kernel_client launch DIR     load a sim binary from a file in DIR, launch with an
//                                argument list and from device memory, check z = x + y
//   kernel_client placeholder    a placeholder argument carries the data of x
//   kernel_client errors DIR     every refusal with its code
//   kernel_client free_under_launch DIR   memory freed under a launch whose argument block
//                                is in device memory, queued behind a long kernel, stays the
//                                device's until the stream dropped the launch
//   kernel_client argument_ring DIR   step by step (each step after a line on stdin): says
//                                "allocated" with its memory allocated, "launched" once a
//                                launch on a stream of its own ran, "destroyed" once that
//                                stream is destroyed; then launches on a new stream and
//                                expects its synchronization to return the code the next
//                                line names (the test set a quota meanwhile)
//   kernel_client large          a binary larger than a message travels in shared memory
//   kernel_client print WHERE    device printf (printf_i32): WHERE "here" expects the text
//                                on this process's stdout, in order with its own output, also
//                                from a force-destroyed stream before the reset returns;
//                                "synchronized" only after a synchronization (a vendor runtime
//                                in this process prints on its own schedule); "elsewhere" (a
//                                vendor runtime prints in acld) only runs it
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "hal/sim/sim_binary.h"
#include "tests/check.h"

using scenario::Check;
using scenario::CheckCode;

namespace {

constexpr size_t kBlockHalves = 2048;  // add_f16_2048: each block adds 2048 halves

std::string AddBinary(const std::string& function = "add_custom") {
  return hal::sim::EncodeSimBinary({{function, "add_f16_2048"}, {"boom", "trap"}});
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// What the exception callback learned of the last failed task.
struct FailedKernel {
  aclError args_code = ACL_SUCCESS;
  std::string args;
  aclError function_code = ACL_SUCCESS;
  aclrtFuncHandle function = nullptr;
  int calls = 0;
};
std::mutex failed_mu;
FailedKernel failed;

void RecordFailedKernel(aclrtExceptionInfo* info) {
  std::lock_guard<std::mutex> lock(failed_mu);
  void* args = nullptr;
  uint32_t length = 0;
  failed.args_code = aclrtGetArgsFromExceptionInfo(info, &args, &length);
  failed.args = failed.args_code == ACL_SUCCESS ? std::string(static_cast<char*>(args), length) : "";
  failed.function = nullptr;
  failed.function_code = aclrtGetFuncHandleFromExceptionInfo(info, &failed.function);
  ++failed.calls;
}

FailedKernel LastFailedKernel() {
  std::lock_guard<std::mutex> lock(failed_mu);
  return failed;
}

struct Vectors {
  std::vector<_Float16> x, y;
  void* dx = nullptr;
  void* dy = nullptr;
  void* dz = nullptr;
  size_t bytes = 0;

  explicit Vectors(uint32_t blocks) : x(blocks * kBlockHalves), y(blocks * kBlockHalves) {
    bytes = x.size() * sizeof(_Float16);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<_Float16>(static_cast<float>(i % 97) + 0.5f);
      y[i] = static_cast<_Float16>(static_cast<float>(i % 13) * 2.0f);
    }
    CheckCode(aclrtMalloc(&dx, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc x");
    CheckCode(aclrtMalloc(&dy, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc y");
    CheckCode(aclrtMalloc(&dz, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc z");
    CheckCode(aclrtMemcpy(dx, bytes, x.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
              "aclrtMemcpy x");
    CheckCode(aclrtMemcpy(dy, bytes, y.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
              "aclrtMemcpy y");
  }
  ~Vectors() {
    aclrtFree(dx);
    aclrtFree(dy);
    if (dz != nullptr) aclrtFree(dz);
  }

  // z on the device equals x + y (exact here: small integers and halves).
  void ExpectSum(const std::string& what) {
    std::vector<_Float16> z(x.size());
    CheckCode(aclrtMemcpy(z.data(), bytes, dz, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS,
              "aclrtMemcpy z");
    size_t wrong = 0;
    for (size_t i = 0; i < z.size(); ++i) {
      if (static_cast<float>(z[i]) != static_cast<float>(x[i] + y[i])) ++wrong;
    }
    Check(wrong == 0, what + ": " + std::to_string(wrong) + " elements of z are not x + y");
  }
};

aclrtArgsHandle Arguments(aclrtFuncHandle function, std::vector<void*> pointers) {
  aclrtArgsHandle args = nullptr;
  CheckCode(aclrtKernelArgsInit(function, &args), ACL_SUCCESS, "aclrtKernelArgsInit");
  for (void*& pointer : pointers) {
    aclrtParamHandle param = nullptr;
    CheckCode(aclrtKernelArgsAppend(args, &pointer, sizeof(pointer), &param), ACL_SUCCESS,
              "aclrtKernelArgsAppend");
  }
  return args;
}

// Loads the sim binary of AddBinary() from a file `name` in `dir`; its
// add_custom function.
aclrtFuncHandle LoadAddCustom(const std::string& dir, const char* name, aclrtBinHandle* binary) {
  const std::string path = WriteFile(dir, name, AddBinary());
  CheckCode(aclrtBinaryLoadFromFile(path.c_str(), nullptr, binary), ACL_SUCCESS,
            "aclrtBinaryLoadFromFile");
  aclrtFuncHandle function = nullptr;
  CheckCode(aclrtBinaryGetFunction(*binary, "add_custom", &function), ACL_SUCCESS,
            "aclrtBinaryGetFunction");
  return function;
}

// add_custom's argument block for `v`, in device memory.
void* DeviceArguments(const Vectors& v, size_t* bytes) {
  void* block[3] = {v.dx, v.dy, v.dz};
  *bytes = sizeof(block);
  void* device_args = nullptr;
  CheckCode(aclrtMalloc(&device_args, sizeof(block), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
            "aclrtMalloc args");
  CheckCode(aclrtMemcpy(device_args, sizeof(block), block, sizeof(block),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS, "aclrtMemcpy args");
  return device_args;
}

int Launch(const std::string& dir) {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  Vectors v(8);
  aclrtBinHandle binary = nullptr;
  aclrtFuncHandle function = LoadAddCustom(dir, "kernels.o", &binary);
  aclrtArgsHandle args = Arguments(function, {v.dx, v.dy, v.dz});
  CheckCode(aclrtKernelArgsFinalize(args), ACL_SUCCESS, "aclrtKernelArgsFinalize");
  CheckCode(aclrtLaunchKernelWithConfig(function, 8, stream, nullptr, args, nullptr), ACL_SUCCESS,
            "aclrtLaunchKernelWithConfig");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  v.ExpectSum("aclrtLaunchKernelWithConfig");

  // The same launch with its argument block in device memory.
  CheckCode(aclrtMemset(v.dz, v.bytes, 0, v.bytes), ACL_SUCCESS, "aclrtMemset z");
  size_t args_bytes = 0;
  void* device_args = DeviceArguments(v, &args_bytes);
  CheckCode(aclrtLaunchKernel(function, 8, device_args, args_bytes, stream), ACL_SUCCESS,
            "aclrtLaunchKernel");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  v.ExpectSum("aclrtLaunchKernel");
  aclrtFree(device_args);

  // A kernel failure is the stream's failure, with the device's code.
  aclrtFuncHandle boom = nullptr;
  CheckCode(aclrtBinaryGetFunction(binary, "boom", &boom), ACL_SUCCESS, "GetFunction boom");
  aclrtArgsHandle none = nullptr;
  CheckCode(aclrtKernelArgsInit(boom, &none), ACL_SUCCESS, "aclrtKernelArgsInit boom");
  CheckCode(aclrtKernelArgsFinalize(none), ACL_SUCCESS, "aclrtKernelArgsFinalize boom");
  CheckCode(aclrtSetExceptionInfoCallback(RecordFailedKernel), ACL_SUCCESS,
            "aclrtSetExceptionInfoCallback");
  CheckCode(aclrtLaunchKernelWithConfig(boom, 1, stream, nullptr, none, nullptr), ACL_SUCCESS,
            "launch boom");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION,
            "aclrtSynchronizeStream after trap");
  FailedKernel seen = LastFailedKernel();
  Check(seen.calls == 1, "the exception callback ran before the synchronization returned");
  CheckCode(seen.function_code, ACL_SUCCESS, "aclrtGetFuncHandleFromExceptionInfo");
  Check(seen.function == boom, "the exception names the failed launch's function");
  CheckCode(seen.args_code, ACL_SUCCESS, "aclrtGetArgsFromExceptionInfo");
  Check(seen.args.empty(), "boom takes no arguments");
  // A launch whose z is nobody's memory fails when the stream reaches it; the
  // callback gets its argument block as launched.
  void* wild = reinterpret_cast<void*>(uintptr_t{16});
  aclrtArgsHandle bad = Arguments(function, {v.dx, v.dy, wild});
  CheckCode(aclrtKernelArgsFinalize(bad), ACL_SUCCESS, "aclrtKernelArgsFinalize bad");
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, nullptr, bad, nullptr), ACL_SUCCESS,
            "launch with a wild pointer");
  Check(aclrtSynchronizeStream(stream) != ACL_SUCCESS, "the wild launch fails");
  seen = LastFailedKernel();
  const void* block_as_launched[3] = {v.dx, v.dy, wild};
  Check(seen.calls == 2, "the exception callback ran for the wild launch");
  Check(seen.function == function, "its function");
  Check(seen.args == std::string(reinterpret_cast<const char*>(block_as_launched), sizeof(block_as_launched)),
        "its 24-byte argument block, as launched");
  CheckCode(aclrtSetExceptionInfoCallback(nullptr), ACL_SUCCESS, "clear the callback");

  // Unloaded: its functions are gone.
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  aclrtArgsHandle again = Arguments(function, {v.dx, v.dy, v.dz});
  CheckCode(aclrtKernelArgsFinalize(again), ACL_SUCCESS, "aclrtKernelArgsFinalize again");
  const aclError launched =
      aclrtLaunchKernelWithConfig(function, 8, stream, nullptr, again, nullptr);
  const aclError synced = aclrtSynchronizeStream(stream);
  Check(launched == ACL_ERROR_INVALID_PARAM || synced == ACL_ERROR_INVALID_PARAM,
        "a launch of an unloaded binary's function is refused (launch " +
            std::to_string(launched) + ", sync " + std::to_string(synced) + ")");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_ERROR_INVALID_PARAM, "aclrtBinaryUnLoad twice");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

size_t FreeDeviceMemory() {
  size_t free = 0, total = 0;
  CheckCode(aclrtGetMemInfo(ACL_HBM_MEM, &free, &total), ACL_SUCCESS, "aclrtGetMemInfo");
  return free;
}

int FreeUnderLaunch(const std::string& dir) {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtBinHandle binary = nullptr;
  aclrtFuncHandle function = LoadAddCustom(dir, "free_under_launch.o", &binary);
  Vectors v(8);
  size_t args_bytes = 0;
  void* device_args = DeviceArguments(v, &args_bytes);
  void* spin_word = nullptr;
  CheckCode(aclrtMalloc(&spin_word, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  std::vector<uint64_t> spin = {scenario::Addr(spin_word), 60000000};  // a minute
  CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, spin.data(), spin.size() * 8, stream),
            ACL_SUCCESS, "launch spin_add_one_u32");
  CheckCode(aclrtLaunchKernel(function, 8, device_args, args_bytes, stream), ACL_SUCCESS,
            "aclrtLaunchKernel");
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "aclrtStreamQuery");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "the launch is queued behind the spinning kernel");
  const size_t before = FreeDeviceMemory();
  CheckCode(aclrtFree(std::exchange(v.dz, nullptr)), ACL_SUCCESS, "aclrtFree z under the launch");
  Check(FreeDeviceMemory() == before,
        "memory freed under a queued launch stays the device's until the launch is done");
  CheckCode(aclrtStreamAbort(stream), ACL_SUCCESS, "aclrtStreamAbort");
  bool released = false;
  for (int i = 0; i < 500 && !released; ++i) {  // 5 s at most
    released = FreeDeviceMemory() > before;
    if (!released) usleep(10000);
  }
  Check(released, "the memory went back once the stream dropped the launch");
  CheckCode(aclrtFree(spin_word), ACL_SUCCESS, "aclrtFree spin word");
  CheckCode(aclrtFree(device_args), ACL_SUCCESS, "aclrtFree args");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  return scenario::Teardown();
}

int Placeholder() {
  scenario::Setup();
  Vectors v(1);
  const std::string bytes = AddBinary();
  aclrtBinHandle binary = nullptr;
  CheckCode(aclrtBinaryLoadFromData(bytes.data(), bytes.size(), nullptr, &binary), ACL_SUCCESS,
            "aclrtBinaryLoadFromData");
  aclrtFuncHandle function = nullptr;
  CheckCode(aclrtBinaryGetFunction(binary, "add_custom", &function), ACL_SUCCESS,
            "aclrtBinaryGetFunction");
  aclrtArgsHandle args = nullptr;
  CheckCode(aclrtKernelArgsInit(function, &args), ACL_SUCCESS, "aclrtKernelArgsInit");
  aclrtParamHandle x = nullptr, y = nullptr, z = nullptr;
  CheckCode(aclrtKernelArgsAppendPlaceHolder(args, &x), ACL_SUCCESS, "AppendPlaceHolder x");
  CheckCode(aclrtKernelArgsAppend(args, &v.dy, 8, &y), ACL_SUCCESS, "Append y");
  CheckCode(aclrtKernelArgsAppend(args, &v.dz, 8, &z), ACL_SUCCESS, "Append z");
  void* buffer = nullptr;
  CheckCode(aclrtKernelArgsGetPlaceHolderBuffer(args, x, v.bytes, &buffer), ACL_SUCCESS,
            "GetPlaceHolderBuffer");
  CheckCode(aclrtKernelArgsAppend(args, &v.dz, 8, &z), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "Append after GetPlaceHolderBuffer");
  CheckCode(aclrtKernelArgsGetPlaceHolderBuffer(args, y, 4, &buffer), ACL_ERROR_INVALID_PARAM,
            "GetPlaceHolderBuffer of a plain parameter");
  CheckCode(aclrtKernelArgsGetPlaceHolderBuffer(args, x, v.bytes, &buffer), ACL_SUCCESS,
            "GetPlaceHolderBuffer again");
  std::memcpy(buffer, v.x.data(), v.bytes);
  CheckCode(aclrtKernelArgsFinalize(args), ACL_SUCCESS, "aclrtKernelArgsFinalize");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, nullptr, args, nullptr), ACL_SUCCESS,
            "aclrtLaunchKernelWithConfig");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  v.ExpectSum("placeholder");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int Errors(const std::string& dir) {
  scenario::Setup();
  aclrtBinHandle binary = nullptr;
  const std::string junk = "\x7f" "ELF this is no sim binary";
  CheckCode(aclrtBinaryLoadFromData(junk.data(), junk.size(), nullptr, &binary),
            ACL_ERROR_INVALID_PARAM, "aclrtBinaryLoadFromData of junk");
  CheckCode(aclrtBinaryLoadFromData(junk.data(), 0, nullptr, &binary), ACL_ERROR_INVALID_PARAM,
            "aclrtBinaryLoadFromData of 0 bytes");
  CheckCode(aclrtBinaryLoadFromData(nullptr, 8, nullptr, &binary), ACL_ERROR_INVALID_PARAM,
            "aclrtBinaryLoadFromData(NULL)");
  CheckCode(aclrtBinaryLoadFromFile((dir + "/missing.o").c_str(), nullptr, &binary),
            ACL_ERROR_INVALID_FILE, "aclrtBinaryLoadFromFile of a missing file");
  CheckCode(aclrtBinaryLoadFromFile(dir.c_str(), nullptr, &binary), ACL_ERROR_INVALID_FILE,
            "aclrtBinaryLoadFromFile of a directory");
  const std::string empty = WriteFile(dir, "empty.o", "");
  CheckCode(aclrtBinaryLoadFromFile(empty.c_str(), nullptr, &binary), ACL_ERROR_INVALID_FILE_SIZE,
            "aclrtBinaryLoadFromFile of an empty file");
  const std::string unknown = hal::sim::EncodeSimBinary({{"f", "no_such_kernel"}});
  CheckCode(aclrtBinaryLoadFromData(unknown.data(), unknown.size(), nullptr, &binary),
            ACL_ERROR_INVALID_PARAM, "a binary naming a kernel the sim lacks");
  aclrtBinaryLoadOption cpu{};
  cpu.type = ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE;
  aclrtBinaryLoadOptions options{&cpu, 1};
  const std::string bytes = AddBinary();
  CheckCode(aclrtBinaryLoadFromData(bytes.data(), bytes.size(), &options, &binary),
            ACL_ERROR_API_NOT_SUPPORT, "AI CPU kernel mode");

  CheckCode(aclrtBinaryLoadFromData(bytes.data(), bytes.size(), nullptr, &binary), ACL_SUCCESS,
            "aclrtBinaryLoadFromData");
  aclrtFuncHandle function = nullptr;
  CheckCode(aclrtBinaryGetFunction(binary, "not_there", &function), ACL_ERROR_RT_KERNEL_LOOKUP,
            "aclrtBinaryGetFunction of an unknown name");
  CheckCode(aclrtBinaryGetFunction(binary, "add_custom", &function), ACL_SUCCESS,
            "aclrtBinaryGetFunction");
  aclrtFuncHandle same = nullptr;
  CheckCode(aclrtBinaryGetFunction(binary, "add_custom", &same), ACL_SUCCESS, "GetFunction again");
  Check(same == function, "one handle per function name");
  CheckCode(aclrtBinaryGetFunction(reinterpret_cast<aclrtBinHandle>(0x1234), "add_custom",
                                   &function),
            ACL_ERROR_INVALID_PARAM, "aclrtBinaryGetFunction of a forged binary handle");

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtArgsHandle args = nullptr;
  CheckCode(aclrtKernelArgsInit(function, &args), ACL_SUCCESS, "aclrtKernelArgsInit");
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, nullptr, args, nullptr),
            ACL_ERROR_INVALID_PARAM, "a launch with an unfinalized list");
  uint64_t word = 0;
  CheckCode(aclrtKernelArgsAppend(args, &word, 0, nullptr), ACL_ERROR_INVALID_PARAM,
            "Append of 0 bytes");
  CheckCode(aclrtKernelArgsAppend(args, nullptr, 8, nullptr), ACL_ERROR_INVALID_PARAM,
            "Append of NULL");
  std::vector<char> big(70 << 10);
  CheckCode(aclrtKernelArgsAppend(args, big.data(), big.size(), nullptr), ACL_ERROR_INVALID_PARAM,
            "Append beyond 64 KiB");
  CheckCode(aclrtKernelArgsFinalize(args), ACL_SUCCESS, "aclrtKernelArgsFinalize");
  CheckCode(aclrtKernelArgsAppend(args, &word, 8, nullptr), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "Append after Finalize");
  int not_null = 0;
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, nullptr, args, &not_null),
            ACL_ERROR_INVALID_PARAM, "reserve must be NULL");
  CheckCode(aclrtLaunchKernelWithConfig(function, 0, stream, nullptr, args, nullptr),
            ACL_ERROR_INVALID_PARAM, "numBlocks 0");
  aclrtLaunchKernelAttr attrs[2] = {};
  attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT;
  attrs[1].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US;
  aclrtLaunchKernelCfg cfg{attrs, 2};
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, &cfg, args, nullptr),
            ACL_ERROR_INVALID_PARAM, "TIMEOUT with TIMEOUT_US");
  CheckCode(aclrtLaunchKernelWithConfig(function, 1, stream, nullptr,
                                        reinterpret_cast<aclrtArgsHandle>(0x99), nullptr),
            ACL_ERROR_INVALID_PARAM, "a forged argument list");
  // Wrong argument size for the kernel (it takes 24 bytes, this list has 0).
  const aclError launched = aclrtLaunchKernelWithConfig(function, 1, stream, nullptr, args, nullptr);
  const aclError synced = aclrtSynchronizeStream(stream);
  Check(launched == ACL_ERROR_INVALID_PARAM || synced == ACL_ERROR_INVALID_PARAM,
        "a launch with arguments of the wrong size is refused");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int Large() {
  scenario::Setup();
  // 300 functions with long names: a valid binary of ~77 KB.
  std::vector<hal::sim::SimBinaryEntry> entries;
  for (int i = 0; i < 300; ++i) {
    entries.push_back({"f" + std::to_string(i) + std::string(240, 'x'), "add_f16_2048"});
  }
  const std::string bytes = hal::sim::EncodeSimBinary(entries);
  Check(bytes.size() > (64 << 10), "the binary is larger than an inline message");
  aclrtBinHandle binary = nullptr;
  CheckCode(aclrtBinaryLoadFromData(bytes.data(), bytes.size(), nullptr, &binary), ACL_SUCCESS,
            "aclrtBinaryLoadFromData of a large binary");
  aclrtFuncHandle function = nullptr;
  CheckCode(aclrtBinaryGetFunction(binary, entries[299].function.c_str(), &function), ACL_SUCCESS,
            "aclrtBinaryGetFunction of its last function");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  const std::string junk(2 << 20, 'j');
  CheckCode(aclrtBinaryLoadFromData(junk.data(), junk.size(), nullptr, &binary),
            ACL_ERROR_INVALID_PARAM, "a large binary that is junk");
  return scenario::Teardown();
}

}  // namespace

// printf_i32's arguments: the values' address, then `format` in 32 fields.
std::vector<uint64_t> PrintArgs(void* values, const std::string& format) {
  std::vector<uint64_t> args(33, 0);
  args[0] = scenario::Addr(values);
  std::memcpy(&args[1], format.data(), std::min<size_t>(format.size(), 256));
  return args;
}

// Runs `body` with this process's stdout going to a file; returns what it wrote.
template <typename Body>
std::string CaptureStdout(const Body& body) {
  std::fflush(stdout);
  std::FILE* file = std::tmpfile();
  const int saved = dup(STDOUT_FILENO);
  dup2(fileno(file), STDOUT_FILENO);
  body();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::string text;
  std::rewind(file);
  char chunk[4096];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) text.append(chunk, got);
  std::fclose(file);
  return text;
}

int Print(const std::string& where) {
  const bool here = where == "here" || where == "synchronized";
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* values = nullptr;
  CheckCode(aclrtMalloc(&values, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  const int32_t host_values[2] = {7, -8};
  CheckCode(aclrtMemcpy(values, 8, host_values, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
            "aclrtMemcpy");
  const std::string printed = CaptureStdout([&] {
    std::printf("before\n");
    const std::vector<uint64_t> args = PrintArgs(values, "value %d\n");
    CheckCode(aclsimLaunchKernel("printf_i32", 2, args.data(), args.size() * 8, stream),
              ACL_SUCCESS, "printf_i32 with values");
    // A format is text, never printf(3)'s: %s and %n print as written.
    const std::vector<uint64_t> hostile = PrintArgs(nullptr, "%s%n%p 100%%\n");
    CheckCode(aclsimLaunchKernel("printf_i32", 1, hostile.data(), hostile.size() * 8, stream),
              ACL_SUCCESS, "printf_i32 without values");
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
    std::printf("after\n");
  });
  const std::string want = "before\nvalue 7\nvalue -8\n%s%n%p 100%\nafter\n";
  if (here) Check(printed == want, "stdout, in order: [" + printed + "]");
  // Values outside this process's memory: the launch's task fails, nothing printed.
  int32_t on_stack = 0;
  const std::vector<uint64_t> foreign = PrintArgs(&on_stack, "leak %d\n");
  const std::string after_fault = CaptureStdout([&] {
    CheckCode(aclsimLaunchKernel("printf_i32", 1, foreign.data(), foreign.size() * 8, stream),
              ACL_SUCCESS, "printf_i32 of memory not the process's (refused when it runs)");
    Check(aclrtSynchronizeStream(stream) != ACL_SUCCESS, "the foreign values fail the task");
  });
  Check(after_fault.find("leak") == std::string::npos, "nothing printed: [" + after_fault + "]");

  // No synchronization at all, as CANN's memory samples do: a force-destroyed
  // stream's kernel still runs, and the reset that covers it waits for it.
  const std::string unsynchronized = CaptureStdout([&] {
    const std::vector<uint64_t> args = PrintArgs(values, "late %d\n");
    CheckCode(aclsimLaunchKernel("printf_i32", 1, args.data(), args.size() * 8, stream),
              ACL_SUCCESS, "printf_i32 before a forced destroy");
    CheckCode(aclrtDestroyStreamForce(stream), ACL_SUCCESS, "aclrtDestroyStreamForce");
    CheckCode(aclrtFree(values), ACL_SUCCESS, "aclrtFree");
    CheckCode(aclrtResetDeviceForce(0), ACL_SUCCESS, "aclrtResetDeviceForce");
  });
  if (where == "here") Check(unsynchronized == "late 7\n", "printed before the reset returned: [" +
                                                    unsynchronized + "]");
  CheckCode(aclFinalize(), ACL_SUCCESS, "aclFinalize");
  return scenario::ExitCode();
}

int ArgumentRing(const std::string& dir) {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  Vectors v(8);
  aclrtBinHandle binary = nullptr;
  aclrtFuncHandle function = LoadAddCustom(dir, "argument_ring.o", &binary);
  aclrtArgsHandle args = Arguments(function, {v.dx, v.dy, v.dz});
  CheckCode(aclrtKernelArgsFinalize(args), ACL_SUCCESS, "aclrtKernelArgsFinalize");
  scenario::Say("allocated");
  scenario::NextLine();
  CheckCode(aclrtLaunchKernelWithConfig(function, 8, stream, nullptr, args, nullptr), ACL_SUCCESS,
            "aclrtLaunchKernelWithConfig");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  v.ExpectSum("aclrtLaunchKernelWithConfig");
  scenario::Say("launched");
  scenario::NextLine();
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  scenario::Say("destroyed");
  const aclError expected = std::stoi(scenario::NextLine());
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  CheckCode(aclrtLaunchKernelWithConfig(function, 8, stream, nullptr, args, nullptr), ACL_SUCCESS,
            "aclrtLaunchKernelWithConfig under the quota");
  CheckCode(aclrtSynchronizeStream(stream), expected, "aclrtSynchronizeStream under the quota");
  if (expected != ACL_SUCCESS) {
    const char* message = aclGetRecentErrMsg();
    Check(message != nullptr && std::strstr(message, "argument ring") != nullptr,
          std::string("the failure names the argument ring: ") + (message ? message : "none"));
  }
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtBinaryUnLoad(binary), ACL_SUCCESS, "aclrtBinaryUnLoad");
  return scenario::Teardown();
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  if (mode == "launch") return Launch(dir);
  if (mode == "placeholder") return Placeholder();
  if (mode == "errors") return Errors(dir);
  if (mode == "free_under_launch") return FreeUnderLaunch(dir);
  if (mode == "argument_ring") return ArgumentRing(dir);
  if (mode == "large") return Large();
  if (mode == "print" && argc > 2) return Print(argv[2]);
  std::fprintf(stderr, "usage: see the comment at the top of kernel_client.cc\n");
  return 2;
}
