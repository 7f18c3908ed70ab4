// A client process exercising the device's built-in tasks through the real
// libascendcl.so, driven by the integration tests.
//
//   builtin_task_client random               aclrtRandomNumAsync: every distribution, the same
//                                            seed and counter giving the same numbers, inputs
//                                            held in device memory, refusals
//   builtin_task_client overflow [unsupported]   saturation mode, the stream switch and the
//                                            process's overflow status; unsupported: every call
//                                            says ACL_ERROR_RT_FEATURE_NOT_SUPPORT (acl backend)
//   builtin_task_client overflow_hold        raises its own overflow status, prints "raised",
//                                            waits for a line, then checks it is still raised
//   builtin_task_client overflow_clean       checks its own status is clear (another process's
//                                            overflow does not show) and resets it
//
// Exits 0 when every check held; prints "FAIL: ..." otherwise.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "tests/check.h"

using scenario::Addr;
using scenario::Check;
using scenario::CheckCode;

namespace {

template <typename T>
std::vector<T> Get(void* device, size_t count) {
  std::vector<T> values(count);
  CheckCode(aclrtMemcpy(values.data(), count * sizeof(T), device, count * sizeof(T),
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "aclrtMemcpy D2H");
  return values;
}

template <typename T>
void Put(void* device, const std::vector<T>& values) {
  CheckCode(aclrtMemcpy(device, values.size() * sizeof(T), values.data(), values.size() * sizeof(T),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS, "aclrtMemcpy H2D");
}

void* Malloc(size_t bytes) {
  void* p = nullptr;
  CheckCode(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  return p;
}

template <typename T>
aclrtRandomParaInfo Value(T value) {
  aclrtRandomParaInfo info{};
  std::memcpy(info.valueOrAddr, &value, sizeof(value));
  info.size = sizeof(value);
  return info;
}

aclrtRandomParaInfo AtAddress(void* device, uint8_t size) {
  aclrtRandomParaInfo info{};
  info.isAddr = 1;
  const uint64_t address = Addr(device);
  std::memcpy(info.valueOrAddr, &address, 8);
  info.size = size;
  return info;
}

aclrtRandomNumTaskInfo Task(aclDataType type, aclrtRandomNumFuncType function, void* result,
                            void* counter, uint64_t seed, uint64_t count) {
  aclrtRandomNumTaskInfo task{};
  task.dataType = type;
  task.randomNumFuncParaInfo.funcType = function;
  task.randomResultAddr = result;
  task.randomCounterAddr = counter;
  task.randomSeed = Value(seed);
  task.randomNum = Value(count);
  return task;
}

// An asynchronous call refused `want`: at once, or by the next synchronization.
void CheckRefused(aclError returned, aclrtStream stream, aclError want, const std::string& what) {
  if (returned != ACL_SUCCESS) return CheckCode(returned, want, what);
  CheckCode(aclrtSynchronizeStream(stream), want, what + ", reported by the synchronization");
}

int Random() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* result = Malloc(1024);
  void* counter = Malloc(16);
  void* params = Malloc(64);
  CheckCode(aclrtMemset(counter, 16, 0, 16), ACL_SUCCESS, "aclrtMemset counter");

  // Uniform int32 in [1, 100): twice with the same seed and counter, then another seed.
  aclrtRandomNumTaskInfo task =
      Task(ACL_INT32, ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS, result, counter, 0, 128);
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min = Value<int32_t>(1);
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max = Value<int32_t>(100);
  CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "uniform int32");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  const std::vector<int32_t> first = Get<int32_t>(result, 128);
  bool in_range = true;
  for (int32_t v : first) in_range &= v >= 1 && v < 100;
  Check(in_range, "uniform int32 numbers lie in [1, 100)");
  CheckCode(aclrtMemset(result, 1024, 0, 1024), ACL_SUCCESS, "clear");
  CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "again");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<int32_t>(result, 128) == first, "the same seed and counter give the same numbers");
  task.randomSeed = Value<uint64_t>(1);
  CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "another seed");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<int32_t>(result, 128) != first, "another seed gives other numbers");

  // Normal floats, mean 3 and stddev 2, with the parameters held in device memory.
  Put<float>(params, {3.0f, 2.0f});
  task = Task(ACL_FLOAT, ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS, result, counter, 0, 256);
  task.randomNumFuncParaInfo.paramInfo.normalDisInfo.mean = AtAddress(params, 4);
  task.randomNumFuncParaInfo.paramInfo.normalDisInfo.stddev =
      AtAddress(static_cast<char*>(params) + 4, 4);
  CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "normal float");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  double sum = 0;
  for (float v : Get<float>(result, 256)) sum += v;
  Check(std::fabs(sum / 256 - 3.0) < 0.5, "normal numbers average near their mean");

  // Dropout bitmask: ratio 0 keeps every bit.
  task = Task(ACL_FLOAT, ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK, result, counter, 0, 64);
  task.randomNumFuncParaInfo.paramInfo.dropoutBitmaskInfo.dropoutRation = Value(0.0f);
  CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "dropout");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<uint64_t>(result, 1)[0] == ~uint64_t{0}, "ratio 0 keeps all 64 bits");

  // Refused at the call.
  CheckCode(aclrtRandomNumAsync(nullptr, stream, nullptr), ACL_ERROR_INVALID_PARAM, "NULL task");
  CheckCode(aclrtRandomNumAsync(&task, stream, params), ACL_ERROR_INVALID_PARAM, "reserve");
  aclrtRandomNumTaskInfo bad = task;
  bad.randomResultAddr = nullptr;
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_ERROR_INVALID_PARAM, "NULL result");
  bad = task;
  bad.dataType = ACL_INT8;
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_ERROR_INVALID_PARAM, "int8");
  bad = task;
  bad.randomNumFuncParaInfo.funcType = static_cast<aclrtRandomNumFuncType>(9);
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_ERROR_INVALID_PARAM, "no function 9");
  bad = task;
  bad.randomSeed.size = 0;
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_ERROR_INVALID_PARAM, "seed size 0");
  // Refused by the daemon's memory checks.
  bad = Task(ACL_INT32, ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS, result, counter, 0, 257);
  bad.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min = Value<int32_t>(0);
  bad.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max = Value<int32_t>(9);
  CheckRefused(aclrtRandomNumAsync(&bad, stream, nullptr), stream, ACL_ERROR_INVALID_PARAM,
               "257 int32 into 1024 bytes");
  int on_stack[4] = {};
  bad.randomNum = Value<uint64_t>(4);
  bad.randomResultAddr = on_stack;
  CheckRefused(aclrtRandomNumAsync(&bad, stream, nullptr), stream, ACL_ERROR_INVALID_PARAM,
               "host memory as the result");
  bad.randomResultAddr = result;
  bad.randomCounterAddr = static_cast<char*>(counter) + 8;
  CheckRefused(aclrtRandomNumAsync(&bad, stream, nullptr), stream, ACL_ERROR_INVALID_PARAM,
               "a counter past its allocation");
  // A count held in device memory that does not fit fails the task.
  Put<uint64_t>(params, {1000});
  bad = task;
  bad.randomNum = AtAddress(params, 8);
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_SUCCESS, "8000 bits from the device");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "1000 bits fit in 1024 bytes");
  bad.dataType = ACL_FLOAT;
  bad.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
  bad.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min = Value(0.0f);
  bad.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max = Value(1.0f);
  CheckCode(aclrtRandomNumAsync(&bad, stream, nullptr), ACL_SUCCESS, "1000 floats, queued");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM,
            "1000 floats do not fit in 1024 bytes: the task fails");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "the failure is reported once");

  CheckCode(aclrtFree(result), ACL_SUCCESS, "free");
  CheckCode(aclrtFree(counter), ACL_SUCCESS, "free");
  CheckCode(aclrtFree(params), ACL_SUCCESS, "free");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

// The first uint32 of the process's overflow status, read through `stream`.
uint32_t OverflowFlag(aclrtStream stream, void* status) {
  CheckCode(aclrtMemset(status, 64, 0xAB, 64), ACL_SUCCESS, "aclrtMemset status");
  CheckCode(aclrtGetOverflowStatus(status, 64, stream), ACL_SUCCESS, "aclrtGetOverflowStatus");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  const std::vector<uint32_t> block = Get<uint32_t>(status, 16);
  bool rest_zero = true;
  for (size_t i = 1; i < block.size(); ++i) rest_zero &= block[i] == 0;
  Check(rest_zero, "the status block past its flag is zero");
  return block[0];
}

// x + alpha * y on `stream` for one float: overflows for x = y = FLT_MAX.
float Axpy(aclrtStream stream, void* x, float value) {
  Put<float>(x, {value});
  uint32_t alpha_bits;
  const float alpha = 1.0f;
  std::memcpy(&alpha_bits, &alpha, 4);
  std::vector<uint64_t> args = {Addr(x), Addr(x), Addr(x), alpha_bits, 1};
  CheckCode(aclsimLaunchKernel("axpy_f32", 1, args.data(), args.size() * 8, stream), ACL_SUCCESS,
            "axpy_f32");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  return Get<float>(x, 1)[0];
}

int OverflowUnsupported() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* status = Malloc(64);
  aclrtFloatOverflowMode mode;
  CheckCode(aclrtGetDeviceSatMode(&mode), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "get mode");
  CheckCode(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "set mode");
  CheckCode(aclrtSetStreamOverflowSwitch(stream, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "switch");
  CheckCode(aclrtGetOverflowStatus(status, 64, stream), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "status");
  CheckCode(aclrtResetOverflowStatus(stream), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "reset");
  CheckCode(aclrtFree(status), ACL_SUCCESS, "free");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int Overflow() {
  scenario::Setup();
  aclrtStream infnan = nullptr, saturating = nullptr;
  CheckCode(aclrtCreateStream(&infnan), ACL_SUCCESS, "aclrtCreateStream");
  void* x = Malloc(64);
  void* status = Malloc(64);

  aclrtFloatOverflowMode mode = ACL_RT_OVERFLOW_MODE_UNDEF;
  CheckCode(aclrtGetDeviceSatMode(&mode), ACL_SUCCESS, "aclrtGetDeviceSatMode");
  Check(mode == ACL_RT_OVERFLOW_MODE_INFNAN, "the default mode is INFNAN");
  CheckCode(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF), ACL_ERROR_INVALID_PARAM, "UNDEF");
  CheckCode(aclrtGetDeviceSatMode(nullptr), ACL_ERROR_INVALID_PARAM, "NULL mode");
  CheckCode(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION), ACL_SUCCESS, "saturation");
  CheckCode(aclrtGetDeviceSatMode(&mode), ACL_SUCCESS, "aclrtGetDeviceSatMode");
  Check(mode == ACL_RT_OVERFLOW_MODE_SATURATION, "the mode reads back");
  CheckCode(aclrtCreateStream(&saturating), ACL_SUCCESS, "aclrtCreateStream");

  // Streams made before the mode changed keep INFNAN; later ones saturate.
  Check(std::isinf(Axpy(infnan, x, FLT_MAX)), "an INFNAN stream overflows to infinity");
  Check(Axpy(saturating, x, FLT_MAX) == FLT_MAX, "a saturating stream stops at FLT_MAX");
  Check(Axpy(saturating, x, 1.5f) == 3.0f, "in range, nothing changes");

  // Nothing is reported while the switches are off.
  uint32_t flag = 7;
  CheckCode(aclrtGetStreamOverflowSwitch(saturating, &flag), ACL_SUCCESS, "get switch");
  Check(flag == 0, "the switch starts off");
  Check(OverflowFlag(saturating, status) == 0, "no overflow reported with the switch off");
  CheckCode(aclrtSetStreamOverflowSwitch(saturating, 1), ACL_SUCCESS, "switch on");
  CheckCode(aclrtGetStreamOverflowSwitch(saturating, &flag), ACL_SUCCESS, "get switch");
  Check(flag == 1, "the switch reads back on");
  Axpy(saturating, x, 1.0f);
  Check(OverflowFlag(infnan, status) == 0, "no overflow yet");
  Axpy(saturating, x, FLT_MAX);
  Check(OverflowFlag(infnan, status) == 1, "an overflow on a switched-on stream is reported");
  CheckCode(aclrtResetOverflowStatus(infnan), ACL_SUCCESS, "aclrtResetOverflowStatus");
  // The reset is a task of `infnan`: read on another stream once it has run.
  CheckCode(aclrtSynchronizeStream(infnan), ACL_SUCCESS, "sync");
  Check(OverflowFlag(saturating, status) == 0, "reset clears the status");
  CheckCode(aclrtSetStreamOverflowSwitch(saturating, 0), ACL_SUCCESS, "switch off");
  Axpy(saturating, x, FLT_MAX);
  Check(OverflowFlag(saturating, status) == 0, "switched off again: nothing reported");
  // The other CANN names of the same status.
  CheckCode(aclrtSetStreamOverflowSwitch(infnan, 1), ACL_SUCCESS, "switch on");
  Axpy(infnan, x, FLT_MAX);
  CheckCode(aclrtGetFloatOverflowStatus(status, 64, infnan), ACL_SUCCESS,
            "aclrtGetFloatOverflowStatus");
  CheckCode(aclrtSynchronizeStream(infnan), ACL_SUCCESS, "sync");
  Check(Get<uint32_t>(status, 1)[0] == 1, "aclrtGetFloatOverflowStatus reads the same status");
  CheckCode(aclrtResetFloatOverflowStatus(infnan), ACL_SUCCESS, "aclrtResetFloatOverflowStatus");
  Check(OverflowFlag(infnan, status) == 0, "and aclrtResetFloatOverflowStatus clears it");

  // Refusals.
  CheckCode(aclrtSetStreamOverflowSwitch(infnan, 2), ACL_ERROR_INVALID_PARAM, "flag 2");
  CheckCode(aclrtGetStreamOverflowSwitch(infnan, nullptr), ACL_ERROR_INVALID_PARAM, "NULL flag");
  CheckCode(aclrtGetOverflowStatus(nullptr, 64, infnan), ACL_ERROR_INVALID_PARAM, "NULL output");
  CheckCode(aclrtGetOverflowStatus(status, 32, infnan), ACL_ERROR_INVALID_PARAM, "32 bytes");
  int on_stack[16] = {};
  CheckRefused(aclrtGetOverflowStatus(on_stack, 64, infnan), infnan, ACL_ERROR_INVALID_PARAM,
               "host memory as the output");
  CheckRefused(aclrtGetOverflowStatus(static_cast<char*>(status) + 8, 64, infnan), infnan,
               ACL_ERROR_INVALID_PARAM, "64 bytes past the allocation's end");

  CheckCode(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN), ACL_SUCCESS, "restore");
  CheckCode(aclrtFree(x), ACL_SUCCESS, "free");
  CheckCode(aclrtFree(status), ACL_SUCCESS, "free");
  CheckCode(aclrtDestroyStream(infnan), ACL_SUCCESS, "destroy");
  CheckCode(aclrtDestroyStream(saturating), ACL_SUCCESS, "destroy");
  return scenario::Teardown();
}

int OverflowHold() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* x = Malloc(64);
  void* status = Malloc(64);
  CheckCode(aclrtSetStreamOverflowSwitch(stream, 1), ACL_SUCCESS, "switch on");
  Axpy(stream, x, FLT_MAX);
  Check(OverflowFlag(stream, status) == 1, "raised");
  std::cout << "raised" << std::endl;
  std::string line;
  std::getline(std::cin, line);
  Check(OverflowFlag(stream, status) == 1, "still raised after the other process's reset");
  return scenario::Teardown();
}

int OverflowClean() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* status = Malloc(64);
  CheckCode(aclrtSetStreamOverflowSwitch(stream, 1), ACL_SUCCESS, "switch on");
  Check(OverflowFlag(stream, status) == 0, "another process's overflow does not show");
  CheckCode(aclrtResetOverflowStatus(stream), ACL_SUCCESS, "reset");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "random") return Random();
  if (mode == "overflow") {
    return argc > 2 && std::string(argv[2]) == "unsupported" ? OverflowUnsupported() : Overflow();
  }
  if (mode == "overflow_hold") return OverflowHold();
  if (mode == "overflow_clean") return OverflowClean();
  std::cerr << "usage: builtin_task_client random|overflow [unsupported]|overflow_hold|"
               "overflow_clean\n";
  return 2;
}
