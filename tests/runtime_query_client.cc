// A client process for the runtime's query and configuration functions
// (device_integration_test.cc, ScenarioTest), each mode checking the normal
// path and every refusal:
//
//   runtime_query_client config       aclrtCreateStreamConfigHandle and friends,
//                                     aclrtCreateStreamV2, aclrtStreamGetPriority /
//                                     GetFlags, aclrtDeviceGetStreamPriorityRange
//   runtime_query_client timestamps   aclrtEventGetTimestamp
//   runtime_query_client faults       aclrtGetErrorVerbose before and after a kernel fault
//   runtime_query_client utilization  aclrtGetDeviceUtilizationRate around a 2.5 s busy kernel
//                                     and an eighth of the device's memory
//   runtime_query_client features     aclGetCannAttributeList / aclGetCannAttribute,
//                                     aclrtGetDeviceCapability, aclrtCheckArchCompatibility
//                                     (before aclInit too)
//   runtime_query_client states       aclrtRegStreamStateCallback: explicit and default streams
//   runtime_query_client exevents     aclrtCreateEventExWithFlag and what its events allow
//   runtime_query_client limits       aclrtGetDeviceInfo; core limits per device, per stream
//                                     and per thread (aclrt*ResLimit, aclrt*ResInCurrentThread)
//   runtime_query_client available    aclrtGetStreamAvailableNum, aclrtGetEventAvailNum
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "tests/check.h"

namespace {

using scenario::Check;
using scenario::CheckCode;

void CheckPriorityRange() {
  int32_t least = -1, greatest = -1;
  CheckCode(aclrtDeviceGetStreamPriorityRange(&least, &greatest), ACL_SUCCESS,
            "aclrtDeviceGetStreamPriorityRange");
  Check(least == 7 && greatest == 0,
        "priority range " + std::to_string(least) + ".." + std::to_string(greatest));
  CheckCode(aclrtDeviceGetStreamPriorityRange(nullptr, &greatest), ACL_ERROR_INVALID_PARAM,
            "null leastPriority");
  CheckCode(aclrtDeviceGetStreamPriorityRange(&least, nullptr), ACL_ERROR_INVALID_PARAM,
            "null greatestPriority");
}

void CheckCreatedWith(aclrtStream stream, uint32_t want_priority, uint32_t want_flags,
                      const std::string& what) {
  uint32_t priority = 99, flags = 99;
  CheckCode(aclrtStreamGetPriority(stream, &priority), ACL_SUCCESS, "GetPriority " + what);
  CheckCode(aclrtStreamGetFlags(stream, &flags), ACL_SUCCESS, "GetFlags " + what);
  Check(priority == want_priority, what + ": priority " + std::to_string(priority));
  Check(flags == want_flags, what + ": flags " + std::to_string(flags));
}

void CheckConfigHandles() {
  aclrtStreamConfigHandle* handle = aclrtCreateStreamConfigHandle();
  Check(handle != nullptr, "aclrtCreateStreamConfigHandle gives a handle");
  if (handle == nullptr) return;
  const uint32_t flags = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC;
  const uint32_t priority = 3;
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_FLAG, &flags, sizeof(flags)),
            ACL_SUCCESS, "set ACL_RT_STREAM_FLAG (4 bytes)");
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_PRIORITY, &priority, sizeof(priority)),
            ACL_SUCCESS, "set ACL_RT_STREAM_PRIORITY");
  Check(handle->flag == flags && handle->priority == priority, "the handle holds what was set");

  // Refusals: a priority out of range, a wrong size, an unknown attribute, NULLs.
  const uint32_t too_low = 8;
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_PRIORITY, &too_low, sizeof(too_low)),
            ACL_ERROR_INVALID_PARAM, "priority 8");
  const uint16_t narrow = 1;
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_FLAG, &narrow, sizeof(narrow)),
            ACL_ERROR_INVALID_PARAM, "a 2-byte flag");
  CheckCode(aclrtSetStreamConfigOpt(handle, static_cast<aclrtStreamConfigAttr>(42), &flags,
                                    sizeof(flags)),
            ACL_ERROR_INVALID_PARAM, "attribute 42");
  CheckCode(aclrtSetStreamConfigOpt(nullptr, ACL_RT_STREAM_FLAG, &flags, sizeof(flags)),
            ACL_ERROR_INVALID_PARAM, "null handle");
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_FLAG, nullptr, sizeof(flags)),
            ACL_ERROR_INVALID_PARAM, "null attrValue");
  Check(handle->flag == flags && handle->priority == priority, "refusals change nothing");

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStreamV2(&stream, handle), ACL_SUCCESS, "aclrtCreateStreamV2");
  CheckCreatedWith(stream, priority, flags, "a stream from the handle");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "the stream works");
  CheckCode(aclrtCreateStreamV2(nullptr, handle), ACL_ERROR_INVALID_PARAM, "null stream");
  CheckCode(aclrtCreateStreamV2(&stream, nullptr), ACL_ERROR_INVALID_PARAM, "null handle");

  // A model work area asks for a model stream, which acld does not provide.
  void* work = &stream;
  CheckCode(aclrtSetStreamConfigOpt(handle, ACL_RT_STREAM_WORK_ADDR_PTR, &work, sizeof(work)),
            ACL_SUCCESS, "set ACL_RT_STREAM_WORK_ADDR_PTR");
  aclrtStream model_stream = nullptr;
  CheckCode(aclrtCreateStreamV2(&model_stream, handle), ACL_ERROR_API_NOT_SUPPORT,
            "a stream with a model work area");
  Check(model_stream == nullptr, "no stream was made");

  CheckCode(aclrtDestroyStreamConfigHandle(handle), ACL_SUCCESS, "destroy the handle");
  CheckCode(aclrtDestroyStreamConfigHandle(handle), ACL_ERROR_INVALID_PARAM, "destroy it twice");
  aclrtStreamConfigHandle on_the_stack{};
  CheckCode(aclrtDestroyStreamConfigHandle(&on_the_stack), ACL_ERROR_INVALID_PARAM,
            "destroy a handle the library did not make");
  CheckCode(aclrtDestroyStreamConfigHandle(nullptr), ACL_ERROR_INVALID_PARAM, "destroy NULL");
  // A handle the application fills in itself works as well.
  on_the_stack.priority = 5;
  aclrtStream from_stack = nullptr;
  CheckCode(aclrtCreateStreamV2(&from_stack, &on_the_stack), ACL_SUCCESS, "a filled-in handle");
  CheckCreatedWith(from_stack, 5, 0, "a stream from a filled-in handle");
  CheckCode(aclrtDestroyStream(from_stack), ACL_SUCCESS, "destroy it");

  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  // A destroyed stream (like another process's handle) is not this process's.
  uint32_t value = 0;
  CheckCode(aclrtStreamGetPriority(stream, &value), ACL_ERROR_INVALID_PARAM, "a destroyed stream");
  CheckCode(aclrtStreamGetFlags(stream, &value), ACL_ERROR_INVALID_PARAM, "a destroyed stream");
}

int Config() {
  CheckPriorityRange();
  scenario::Setup();
  aclrtStream with_config = nullptr;
  CheckCode(aclrtCreateStreamWithConfig(&with_config, 7, ACL_STREAM_FAST_SYNC), ACL_SUCCESS,
            "aclrtCreateStreamWithConfig");
  CheckCreatedWith(with_config, 7, ACL_STREAM_FAST_SYNC, "aclrtCreateStreamWithConfig");
  CheckCreatedWith(nullptr, 0, 0, "the default stream");
  CheckCode(aclrtStreamGetPriority(with_config, nullptr), ACL_ERROR_INVALID_PARAM, "null priority");
  CheckCode(aclrtStreamGetFlags(with_config, nullptr), ACL_ERROR_INVALID_PARAM, "null flags");
  CheckCode(aclrtDestroyStream(with_config), ACL_SUCCESS, "aclrtDestroyStream");
  CheckConfigHandles();
  CheckPriorityRange();
  return scenario::Teardown();
}

// Two records around a ~20 ms kernel: their timestamps (microseconds) are
// ordered, agree with aclrtEventElapsedTime, and read the device's clock.
int Timestamps() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtEvent start = nullptr, end = nullptr;
  CheckCode(aclrtCreateEvent(&start), ACL_SUCCESS, "aclrtCreateEvent(start)");
  CheckCode(aclrtCreateEvent(&end), ACL_SUCCESS, "aclrtCreateEvent(end)");
  uint64_t timestamp = 0;
  CheckCode(aclrtEventGetTimestamp(start, &timestamp), ACL_ERROR_RT_EVENT_NOT_COMPLETE,
            "an event never recorded");
  CheckCode(aclrtEventGetTimestamp(start, nullptr), ACL_ERROR_INVALID_PARAM, "null timestamp");
  CheckCode(aclrtEventGetTimestamp(nullptr, &timestamp), ACL_ERROR_INVALID_PARAM, "null event");

  CheckCode(aclrtRecordEvent(start, stream), ACL_SUCCESS, "record start");
  const uint64_t sleep_us = 20000;
  void* counter = nullptr;
  CheckCode(aclrtMalloc(&counter, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  const uint64_t args[] = {scenario::Addr(counter), sleep_us};
  CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args, sizeof(args), stream), ACL_SUCCESS,
            "a 20 ms kernel");
  CheckCode(aclrtRecordEvent(end, stream), ACL_SUCCESS, "record end");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");

  uint64_t start_us = 0, end_us = 0;
  CheckCode(aclrtEventGetTimestamp(start, &start_us), ACL_SUCCESS, "timestamp of start");
  CheckCode(aclrtEventGetTimestamp(end, &end_us), ACL_SUCCESS, "timestamp of end");
  Check(end_us >= start_us + sleep_us, "end - start = " + std::to_string(end_us - start_us) +
                                           " us covers the 20 ms kernel");
  float elapsed_ms = 0;
  CheckCode(aclrtEventElapsedTime(&elapsed_ms, start, end), ACL_SUCCESS, "aclrtEventElapsedTime");
  const double from_timestamps_ms = static_cast<double>(end_us - start_us) / 1000.0;
  Check(from_timestamps_ms - elapsed_ms < 0.01 && elapsed_ms - from_timestamps_ms < 0.01,
        "timestamps agree with aclrtEventElapsedTime: " + std::to_string(from_timestamps_ms) +
            " vs " + std::to_string(elapsed_ms) + " ms");
  CheckCode(aclrtDestroyEvent(start), ACL_SUCCESS, "destroy start");
  CheckCode(aclrtEventGetTimestamp(start, &timestamp), ACL_ERROR_INVALID_PARAM,
            "a destroyed event");
  CheckCode(aclrtDestroyEvent(end), ACL_SUCCESS, "destroy end");
  CheckCode(aclrtFree(counter), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int Faults() {
  scenario::Setup();
  uint32_t device_count = 0;
  CheckCode(aclrtGetDeviceCount(&device_count), ACL_SUCCESS, "aclrtGetDeviceCount");
  aclrtErrorInfo info{};
  info.errorType = ACL_RT_ERROR_L2;  // overwritten
  CheckCode(aclrtGetErrorVerbose(0, &info), ACL_SUCCESS, "aclrtGetErrorVerbose before a fault");
  Check(info.errorType == ACL_RT_NO_ERROR && info.hasDetail == 0 && info.tryRepair == 0,
        "no fault yet: errorType " + std::to_string(info.errorType));
  CheckCode(aclrtGetErrorVerbose(0, nullptr), ACL_ERROR_INVALID_PARAM, "null errorInfo");
  CheckCode(aclrtGetErrorVerbose(-1, &info), ACL_ERROR_RT_INVALID_DEVICEID, "device -1");
  CheckCode(aclrtGetErrorVerbose(static_cast<int32_t>(device_count), &info),
            ACL_ERROR_RT_INVALID_DEVICEID, "a device past the last");

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  CheckCode(aclsimLaunchKernel("trap", 1, nullptr, 0, stream), ACL_SUCCESS, "launch trap");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION, "the fault shows");
  CheckCode(aclrtGetErrorVerbose(0, &info), ACL_SUCCESS, "aclrtGetErrorVerbose after the fault");
  Check(info.errorType == ACL_RT_ERROR_AICORE, "a kernel fault: errorType " +
                                                   std::to_string(info.errorType));
  Check(info.hasDetail == 1 && info.detail.aicoreErrType == ACL_RT_AICORE_ERROR_SW,
        "the detail says software");
  Check(info.tryRepair == 0, "nothing to repair");
  if (device_count > 1) {
    CheckCode(aclrtGetErrorVerbose(1, &info), ACL_SUCCESS, "another device");
    Check(info.errorType == ACL_RT_NO_ERROR, "another device has no fault");
  }
  // Outside an exception callback there is no exception info to read
  // (tests/kernel_client.cc reads a failed launch's).
  void* args = nullptr;
  uint32_t args_size = 0;
  CheckCode(aclrtGetArgsFromExceptionInfo(nullptr, &args, &args_size), ACL_ERROR_INVALID_PARAM,
            "aclrtGetArgsFromExceptionInfo(NULL)");
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr && std::string(message).find("info") != std::string::npos,
        "the reason is given");
  aclrtFuncHandle function = nullptr;
  CheckCode(aclrtGetFuncHandleFromExceptionInfo(nullptr, &function), ACL_ERROR_INVALID_PARAM,
            "aclrtGetFuncHandleFromExceptionInfo(NULL)");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

void CheckUtilization(const aclrtUtilizationInfo& info, const std::string& when) {
  const int32_t figures[] = {info.cubeUtilization, info.vectorUtilization, info.aicpuUtilization,
                             info.memoryUtilization};
  for (int32_t figure : figures) {
    Check(figure >= -1 && figure <= 100, when + ": a figure out of range: " +
                                             std::to_string(figure));
  }
}

int Utilization() {
  scenario::Setup();
  aclrtUtilizationInfo info{};
  CheckCode(aclrtGetDeviceUtilizationRate(0, &info), ACL_SUCCESS, "utilization at the start");
  CheckUtilization(info, "at the start");  // others' kernels may have run on a shared daemon
  CheckCode(aclrtGetDeviceUtilizationRate(0, nullptr), ACL_ERROR_INVALID_PARAM, "null info");
  CheckCode(aclrtGetDeviceUtilizationRate(-1, &info), ACL_ERROR_RT_INVALID_DEVICEID, "device -1");
  CheckCode(aclrtGetDeviceUtilizationRate(1000, &info), ACL_ERROR_RT_INVALID_DEVICEID,
            "device 1000");
  aclrtUtilizationInfo with_extend{};
  with_extend.utilizationExtend = reinterpret_cast<aclrtUtilizationExtendInfo*>(&info);
  CheckCode(aclrtGetDeviceUtilizationRate(0, &with_extend), ACL_ERROR_INVALID_PARAM,
            "utilizationExtend must be NULL");

  size_t free_bytes = 0, total_bytes = 0;
  CheckCode(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total_bytes), ACL_SUCCESS,
            "aclrtGetMemInfo");
  void* eighth = nullptr;
  CheckCode(aclrtMalloc(&eighth, total_bytes / 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
            "an eighth of the device's memory");
  void* counter = nullptr;
  CheckCode(aclrtMalloc(&counter, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  // Busy for 2.5 s: whatever second the device measured last lies inside.
  const uint64_t args[] = {scenario::Addr(counter), 2500000};
  CheckCode(aclsimLaunchKernel("spin_add_one_u32", 1, args, sizeof(args), stream), ACL_SUCCESS,
            "a 2.5 s kernel");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  CheckCode(aclrtGetDeviceUtilizationRate(0, &info), ACL_SUCCESS, "utilization after it");
  CheckUtilization(info, "after the busy kernel");
  Check(info.cubeUtilization >= 50 && info.vectorUtilization == info.cubeUtilization,
        "the busy second shows: cube " + std::to_string(info.cubeUtilization) + ", vector " +
            std::to_string(info.vectorUtilization));
  Check(info.memoryUtilization >= 12, "an eighth of the memory is in use: " +
                                          std::to_string(info.memoryUtilization));
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtFree(counter), ACL_SUCCESS, "aclrtFree(counter)");
  CheckCode(aclrtFree(eighth), ACL_SUCCESS, "aclrtFree(eighth)");
  return scenario::Teardown();
}

void CheckFeatures(const std::string& when) {
  const aclCannAttr* list = nullptr;
  size_t count = 0;
  CheckCode(aclGetCannAttributeList(&list, &count), ACL_SUCCESS, "aclGetCannAttributeList " + when);
  Check(list != nullptr && count >= 1, "the sim supports an attribute " + when);
  bool inf_nan = false;
  for (size_t i = 0; list != nullptr && i < count; ++i) {
    int32_t value = -1;
    CheckCode(aclGetCannAttribute(list[i], &value), ACL_SUCCESS, "a listed attribute");
    Check(value == 1, "a listed attribute is supported: " + std::to_string(list[i]));
    inf_nan = inf_nan || list[i] == ACL_CANN_ATTR_INF_NAN;
  }
  Check(inf_nan, "the sim computes with infinities and NaNs " + when);
  int32_t value = -1;
  CheckCode(aclGetCannAttribute(ACL_CANN_ATTR_BF16, &value), ACL_SUCCESS, "ACL_CANN_ATTR_BF16");
  Check(value == 0, "the sim has no BF16 kernels");
  CheckCode(aclGetCannAttribute(static_cast<aclCannAttr>(42), &value), ACL_ERROR_INVALID_PARAM,
            "attribute 42");
  CheckCode(aclGetCannAttribute(ACL_CANN_ATTR_BF16, nullptr), ACL_ERROR_INVALID_PARAM, "null value");
  CheckCode(aclGetCannAttributeList(nullptr, &count), ACL_ERROR_INVALID_PARAM, "null list");
  CheckCode(aclGetCannAttributeList(&list, nullptr), ACL_ERROR_INVALID_PARAM, "null num");

  value = -1;
  CheckCode(aclrtGetDeviceCapability(0, ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, &value),
            ACL_SUCCESS, "aclrtGetDeviceCapability " + when);
  Check(value == ACL_DEV_FEATURE_NOT_SUPPORT, "the sim updates no model tasks");
  CheckCode(aclrtGetDeviceCapability(0, static_cast<aclrtDevFeatureType>(7), &value),
            ACL_ERROR_INVALID_PARAM, "feature 7");
  CheckCode(aclrtGetDeviceCapability(-1, ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV, &value),
            ACL_ERROR_RT_INVALID_DEVICEID, "device -1");
  CheckCode(aclrtGetDeviceCapability(0, ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV, nullptr),
            ACL_ERROR_INVALID_PARAM, "null value");

  const char* soc = aclrtGetSocName();
  Check(soc != nullptr && soc[0] != '\0', "a SoC name");
  int32_t compatible = -1;
  CheckCode(aclrtCheckArchCompatibility(soc, &compatible), ACL_SUCCESS, "the device's own SoC");
  Check(compatible == 1, "the device's own SoC is compatible");
  CheckCode(aclrtCheckArchCompatibility("Ascend310P3", &compatible), ACL_SUCCESS, "another SoC");
  Check(compatible == 0, "another SoC is not");
  CheckCode(aclrtCheckArchCompatibility(nullptr, &compatible), ACL_ERROR_INVALID_PARAM, "null soc");
  CheckCode(aclrtCheckArchCompatibility(soc, nullptr), ACL_ERROR_INVALID_PARAM, "null result");
}

int Features() {
  CheckFeatures("before aclInit");
  scenario::Setup();
  CheckFeatures("after aclInit");
  return scenario::Teardown();
}

struct StateCall {
  aclrtStream stream;
  aclrtStreamState state;
  void* args;
};
std::vector<StateCall> state_calls;

void RecordState(aclrtStream stream, aclrtStreamState state, void* args) {
  state_calls.push_back({stream, state, args});
}

// The calls since the last look, then forgotten.
std::vector<StateCall> TakeStateCalls() { return std::exchange(state_calls, {}); }

bool Saw(const std::vector<StateCall>& calls, aclrtStream stream, aclrtStreamState state) {
  for (const StateCall& call : calls) {
    if (call.stream == stream && call.state == state) return true;
  }
  return false;
}

int States() {
  int tag = 0;
  CheckCode(aclrtRegStreamStateCallback("test", RecordState, &tag), ACL_SUCCESS,
            "aclrtRegStreamStateCallback");
  CheckCode(aclrtRegStreamStateCallback("test", RecordState, &tag), ACL_ERROR_INVALID_PARAM,
            "registering a name twice");
  CheckCode(aclrtRegStreamStateCallback(nullptr, RecordState, &tag), ACL_ERROR_INVALID_PARAM,
            "a NULL name");
  CheckCode(aclrtRegStreamStateCallback("", RecordState, &tag), ACL_ERROR_INVALID_PARAM,
            "an empty name");
  const std::string long_name(1000, 'n');
  CheckCode(aclrtRegStreamStateCallback(long_name.c_str(), RecordState, &tag),
            ACL_ERROR_INVALID_PARAM, "a name too long");
  CheckCode(aclrtRegStreamStateCallback("never", nullptr, nullptr), ACL_ERROR_INVALID_PARAM,
            "removing a name never registered");

  // The device's default stream comes with the first aclrtSetDevice only.
  scenario::Setup();
  aclrtStream default_stream = nullptr;
  CheckCode(aclrtCtxGetCurrentDefaultStream(&default_stream), ACL_SUCCESS, "the default stream");
  std::vector<StateCall> calls = TakeStateCalls();
  Check(calls.size() == 1 && Saw(calls, default_stream, ACL_RT_STREAM_STATE_CREATE_POST) &&
            calls[0].args == &tag,
        "the default stream's creation, with the args: " + std::to_string(calls.size()));
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice again");
  Check(TakeStateCalls().empty(), "a second reference creates no stream");

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  calls = TakeStateCalls();
  Check(calls.size() == 1 && Saw(calls, stream, ACL_RT_STREAM_STATE_CREATE_POST),
        "aclrtCreateStream's stream");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  calls = TakeStateCalls();
  Check(calls.size() == 1 && Saw(calls, stream, ACL_RT_STREAM_STATE_DESTROY_PRE),
        "aclrtDestroyStream's stream");

  // A context brings its own default stream and takes it along.
  aclrtContext context = nullptr;
  CheckCode(aclrtCreateContext(&context, 0), ACL_SUCCESS, "aclrtCreateContext");
  aclrtStream context_stream = nullptr;
  CheckCode(aclrtCtxGetCurrentDefaultStream(&context_stream), ACL_SUCCESS, "its default stream");
  calls = TakeStateCalls();
  Check(calls.size() == 1 && Saw(calls, context_stream, ACL_RT_STREAM_STATE_CREATE_POST),
        "the context's default stream");
  CheckCode(aclrtDestroyContext(context), ACL_SUCCESS, "aclrtDestroyContext");
  calls = TakeStateCalls();
  Check(calls.size() == 1 && Saw(calls, context_stream, ACL_RT_STREAM_STATE_DESTROY_PRE),
        "the context's default stream goes with it");

  // The reset that drops the device's last reference takes every stream.
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice");
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  TakeStateCalls();
  CheckCode(aclrtResetDevice(0), ACL_SUCCESS, "aclrtResetDevice (references left)");
  Check(TakeStateCalls().empty(), "no stream goes while references are left");
  CheckCode(aclrtResetDeviceForce(0), ACL_SUCCESS, "aclrtResetDeviceForce");
  calls = TakeStateCalls();
  Check(Saw(calls, default_stream, ACL_RT_STREAM_STATE_DESTROY_PRE) &&
            Saw(calls, stream, ACL_RT_STREAM_STATE_DESTROY_PRE),
        "the reset takes the default and the explicit stream: " + std::to_string(calls.size()));

  CheckCode(aclrtRegStreamStateCallback("test", nullptr, nullptr), ACL_SUCCESS, "removing it");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice after removing it");
  Check(TakeStateCalls().empty(), "a removed callback runs no more");
  return scenario::Teardown();
}

int ExEvents() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  aclrtEvent synced = nullptr;
  CheckCode(aclrtCreateEventExWithFlag(&synced, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE), ACL_SUCCESS,
            "an ex event with SYNC | TIME_LINE");
  CheckCode(aclrtRecordEvent(synced, stream), ACL_SUCCESS, "aclrtRecordEvent");
  CheckCode(aclrtStreamWaitEvent(nullptr, synced), ACL_SUCCESS, "waiting for it (SYNC)");
  CheckCode(aclrtSynchronizeEvent(synced), ACL_SUCCESS, "aclrtSynchronizeEvent");
  aclrtEventRecordedStatus recorded = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  CheckCode(aclrtQueryEventStatus(synced, &recorded), ACL_SUCCESS, "aclrtQueryEventStatus");
  Check(recorded == ACL_EVENT_RECORDED_STATUS_COMPLETE, "recorded and complete");
  uint64_t timestamp = 0;
  CheckCode(aclrtEventGetTimestamp(synced, &timestamp), ACL_SUCCESS, "its timestamp");
  aclrtEventStatus status = ACL_EVENT_STATUS_NOT_READY;
  CheckCode(aclrtQueryEvent(synced, &status), ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent refuses it");
  CheckCode(aclrtResetEvent(synced, stream), ACL_ERROR_INVALID_PARAM, "aclrtResetEvent refuses it");

  aclrtEvent unsynced = nullptr;
  CheckCode(aclrtCreateEventExWithFlag(&unsynced, ACL_EVENT_TIME_LINE), ACL_SUCCESS,
            "an ex event without SYNC");
  CheckCode(aclrtRecordEvent(unsynced, stream), ACL_SUCCESS, "recording it");
  CheckCode(aclrtStreamWaitEvent(stream, unsynced), ACL_ERROR_INVALID_PARAM,
            "waiting for it needs SYNC");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "the stream is fine");

  // An IPC event can be waited for (tests/sharing_integration_test.cc shares one).
  aclrtEvent ipc = nullptr;
  CheckCode(aclrtCreateEventExWithFlag(&ipc, ACL_EVENT_IPC), ACL_SUCCESS, "ACL_EVENT_IPC");
  CheckCode(aclrtRecordEvent(ipc, stream), ACL_SUCCESS, "recording an IPC event");
  CheckCode(aclrtStreamWaitEvent(stream, ipc), ACL_SUCCESS, "waiting for an IPC event");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  CheckCode(aclrtDestroyEvent(ipc), ACL_SUCCESS, "aclrtDestroyEvent");
  aclrtEvent refused = nullptr;
  CheckCode(aclrtCreateEventExWithFlag(&refused, 0x100), ACL_ERROR_INVALID_PARAM, "an unknown bit");
  CheckCode(aclrtCreateEventExWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM, "NULL");
  Check(refused == nullptr, "no event was made");

  // An ordinary event keeps everything it had.
  aclrtEvent plain = nullptr;
  CheckCode(aclrtCreateEvent(&plain), ACL_SUCCESS, "aclrtCreateEvent");
  CheckCode(aclrtRecordEvent(plain, stream), ACL_SUCCESS, "record");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  CheckCode(aclrtQueryEvent(plain, &status), ACL_SUCCESS, "aclrtQueryEvent of an ordinary event");
  CheckCode(aclrtResetEvent(plain, stream), ACL_SUCCESS, "aclrtResetEvent of an ordinary event");
  for (aclrtEvent event : {synced, unsynced, plain}) {
    CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "aclrtDestroyEvent");
  }
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

uint32_t DeviceLimit(aclrtDevResLimitType type) {
  uint32_t value = 0;
  CheckCode(aclrtGetDeviceResLimit(0, type, &value), ACL_SUCCESS, "aclrtGetDeviceResLimit");
  return value;
}

uint32_t StreamLimit(aclrtStream stream, aclrtDevResLimitType type) {
  uint32_t value = 0;
  CheckCode(aclrtGetStreamResLimit(stream, type, &value), ACL_SUCCESS, "aclrtGetStreamResLimit");
  return value;
}

uint32_t ThreadLimit(aclrtDevResLimitType type) {
  uint32_t value = 0;
  CheckCode(aclrtGetResInCurrentThread(type, &value), ACL_SUCCESS, "aclrtGetResInCurrentThread");
  return value;
}

int Limits() {
  scenario::Setup();
  int64_t cube = 0, vector = 0, memory = 0, value = 0;
  CheckCode(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_CUBE_CORE_NUM, &cube), ACL_SUCCESS, "cube cores");
  CheckCode(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_VECTOR_CORE_NUM, &vector), ACL_SUCCESS,
            "vector cores");
  CheckCode(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, &memory), ACL_SUCCESS,
            "total memory");
  Check(cube == 24 && vector == 48, "the sim states 24 cube and 48 vector cores: " +
                                        std::to_string(cube) + ", " + std::to_string(vector));
  size_t free_bytes = 0, total_bytes = 0;
  CheckCode(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total_bytes), ACL_SUCCESS, "aclrtGetMemInfo");
  Check(static_cast<uint64_t>(memory) == total_bytes, "total memory matches aclrtGetMemInfo");
  CheckCode(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_WARP_SIZE, &value), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "an attribute the sim does not state");
  CheckCode(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_CUBE_CORE_NUM, nullptr), ACL_ERROR_INVALID_PARAM,
            "NULL value");
  CheckCode(aclrtGetDeviceInfo(99, ACL_DEV_ATTR_CUBE_CORE_NUM, &value),
            ACL_ERROR_RT_INVALID_DEVICEID, "no device 99");
  CheckCode(aclrtGetDeviceInfo(0x80000000u, ACL_DEV_ATTR_CUBE_CORE_NUM, &value),
            ACL_ERROR_RT_INVALID_DEVICEID, "a device id past INT32_MAX");

  // Device limits: the core counts by default; set, read, reset.
  Check(DeviceLimit(ACL_RT_DEV_RES_CUBE_CORE) == 24, "the default cube limit is the device's");
  Check(DeviceLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "the default vector limit is the device's");
  CheckCode(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 8), ACL_SUCCESS, "cube limit 8");
  Check(DeviceLimit(ACL_RT_DEV_RES_CUBE_CORE) == 8, "the cube limit is 8");
  Check(DeviceLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "the vector limit is untouched");
  CheckCode(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 0), ACL_ERROR_INVALID_PARAM,
            "a limit of 0 cores");
  CheckCode(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 25), ACL_ERROR_INVALID_PARAM,
            "more cores than the device has");
  CheckCode(aclrtSetDeviceResLimit(0, static_cast<aclrtDevResLimitType>(7), 1),
            ACL_ERROR_INVALID_PARAM, "an unknown resource type");
  CheckCode(aclrtSetDeviceResLimit(99, ACL_RT_DEV_RES_CUBE_CORE, 1), ACL_ERROR_RT_INVALID_DEVICEID,
            "no device 99");
  Check(DeviceLimit(ACL_RT_DEV_RES_CUBE_CORE) == 8, "refusals change nothing");
  Check(ThreadLimit(ACL_RT_DEV_RES_CUBE_CORE) == 8, "a thread without a stream: the device's limit");

  // Stream limits: the device's by default, their own once set.
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  Check(StreamLimit(stream, ACL_RT_DEV_RES_CUBE_CORE) == 8, "a new stream has the device's limit");
  CheckCode(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, 20), ACL_SUCCESS,
            "stream vector limit 20");
  Check(StreamLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE) == 20, "the stream's vector limit is 20");
  Check(StreamLimit(nullptr, ACL_RT_DEV_RES_VECTOR_CORE) == 48, "the default stream keeps 48");
  CheckCode(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, 49), ACL_ERROR_INVALID_PARAM,
            "more vector cores than the device has");

  // A thread uses a stream's limits until it stops; another thread does not see them.
  Check(ThreadLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "before the thread uses the stream");
  CheckCode(aclrtUseStreamResInCurrentThread(stream), ACL_SUCCESS, "aclrtUseStreamResInCurrentThread");
  Check(ThreadLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 20, "the thread uses the stream's limit");
  Check(ThreadLimit(ACL_RT_DEV_RES_CUBE_CORE) == 8, "the stream's unset type: the device's limit");
  uint32_t other_thread = 0;
  std::thread other([&] {
    aclrtSetDevice(0);
    aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &other_thread);
  });
  other.join();
  Check(other_thread == 48, "another thread keeps the device's limit: " +
                                std::to_string(other_thread));
  CheckCode(aclrtUnuseStreamResInCurrentThread(nullptr), ACL_ERROR_INVALID_PARAM,
            "stopping the use of a stream the thread does not use");
  CheckCode(aclrtResetStreamResLimit(stream), ACL_SUCCESS, "aclrtResetStreamResLimit");
  Check(ThreadLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "a reset stream gives the device's limit");
  CheckCode(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, 4), ACL_SUCCESS, "4 again");
  CheckCode(aclrtUnuseStreamResInCurrentThread(stream), ACL_SUCCESS, "aclrtUnuseStreamResInCurrentThread");
  Check(ThreadLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "after the thread stops using the stream");

  // A destroyed stream's limits go with it.
  CheckCode(aclrtUseStreamResInCurrentThread(stream), ACL_SUCCESS, "using the stream again");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  Check(ThreadLimit(ACL_RT_DEV_RES_VECTOR_CORE) == 48, "a destroyed stream's limits are gone");
  uint32_t limit = 0;
  CheckCode(aclrtGetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, &limit),
            ACL_ERROR_INVALID_PARAM, "a destroyed stream");
  CheckCode(aclrtGetStreamResLimit(nullptr, ACL_RT_DEV_RES_VECTOR_CORE, nullptr),
            ACL_ERROR_INVALID_PARAM, "NULL value");

  CheckCode(aclrtResetDeviceResLimit(0), ACL_SUCCESS, "aclrtResetDeviceResLimit");
  Check(DeviceLimit(ACL_RT_DEV_RES_CUBE_CORE) == 24, "the reset gives the device's count back");
  return scenario::Teardown();
}

// What aclrtGetStreamAvailableNum and aclrtGetEventAvailNum answer falls by
// one with each stream or event made and comes back when it goes; the
// numbers are finite (the session's own quotas hold at least). Which limit
// is the tightest depends on the backend (on acl, the uid's share of the
// device's events): daemon/core/runtime_test.cc checks each.
int Available() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  uint32_t count = 0;
  CheckCode(aclrtGetStreamAvailableNum(&count), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
  CheckCode(aclrtGetEventAvailNum(&count), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
  CheckCode(aclrtGetStreamAvailableNum(nullptr), ACL_ERROR_INVALID_PARAM, "NULL streamCount");
  CheckCode(aclrtGetEventAvailNum(nullptr), ACL_ERROR_INVALID_PARAM, "NULL eventCount");
  auto streams = [] {
    uint32_t available = 0;
    CheckCode(aclrtGetStreamAvailableNum(&available), ACL_SUCCESS, "aclrtGetStreamAvailableNum");
    return available;
  };
  auto events = [] {
    uint32_t available = 0;
    CheckCode(aclrtGetEventAvailNum(&available), ACL_SUCCESS, "aclrtGetEventAvailNum");
    return available;
  };
  const uint32_t streams_before = streams();
  const uint32_t events_before = events();
  Check(streams_before > 1 && streams_before < UINT32_MAX,
        "streams available: " + std::to_string(streams_before));
  Check(events_before > 1 && events_before < UINT32_MAX,
        "events available: " + std::to_string(events_before));

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  Check(streams() == streams_before - 1, "a stream made: " + std::to_string(streams()));
  aclrtEvent event = nullptr;
  CheckCode(aclrtCreateEvent(&event), ACL_SUCCESS, "aclrtCreateEvent");
  Check(events() == events_before - 1, "an event made: " + std::to_string(events()));

  CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "aclrtDestroyEvent");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  Check(streams() == streams_before, "the stream gone: " + std::to_string(streams()));
  Check(events() == events_before, "the event gone: " + std::to_string(events()));
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "config") return Config();
  if (mode == "timestamps") return Timestamps();
  if (mode == "faults") return Faults();
  if (mode == "utilization") return Utilization();
  if (mode == "features") return Features();
  if (mode == "states") return States();
  if (mode == "exevents") return ExEvents();
  if (mode == "limits") return Limits();
  if (mode == "available") return Available();
  std::fprintf(stderr,
               "usage: %s config | timestamps | faults | utilization | features | states | "
               "exevents | limits | available\n",
               argv[0]);
  return 2;
}
