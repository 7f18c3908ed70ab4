#include "daemon/core/runtime.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "absl/strings/str_cat.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_backend.h"
#include "hal/sim/sim_binary.h"
#include "hal/testing/eventually.h"
#include "hal/testing/fake_clock.h"

namespace acld {
namespace {

using hal::testing::Eventually;

// Runs a call that answers through a Done and returns its status (at most 30 s).
absl::Status Completed(const std::function<void(Done)>& start) {
  auto done = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::Status>();
  start([done, result](absl::Status status) {
    *result = std::move(status);
    done->Notify();
  });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(30))) {
    return absl::DeadlineExceededError("no answer within 30 s");
  }
  return *result;
}

class RuntimeTest : public ::testing::Test {
 protected:
  RuntimeTest() : runtime_(hal::sim::CreateSimBackend({2, 1 << 20})) {}

  bool DeviceUp(int32_t id) { return runtime_.Snapshot().devices.at(id).up; }

  Runtime runtime_;
};

// A client chooses its config and settings, every byte: acld refuses a
// config larger than any aclInit reads, and keeps only a bounded excerpt of
// the settings for operators.
TEST_F(RuntimeTest, AClientsInitSettingsAreBounded) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  InitSettings huge;
  huge.config_content.assign(kMaxInitConfigBytes + 1, ' ');
  absl::Status refused = runtime_.Initialize(a, huge);
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_INVALID_PARAM) << refused;
  EXPECT_EQ(runtime_.InitCount(a).value_or(99), 0u) << "a refused config initializes nothing";

  InitSettings many;
  many.config_content.assign(kMaxInitConfigBytes, ' ');
  for (int i = 0; i < 1000; ++i) {
    many.settings[absl::StrCat(i, "key", std::string(1000, 'k'))] = std::string(100000, 'v');
  }
  ASSERT_TRUE(runtime_.Initialize(a, many).ok());
  const std::map<std::string, std::string> shown = runtime_.Snapshot().sessions.at(0).session.config;
  // Four settings of 256 + 256 bytes fill the 2 KiB all of them may take.
  EXPECT_EQ(shown.size(), kMaxInitSettingsBytes / (2 * kMaxInitSettingBytes));
  for (const auto& [key, value] : shown) {
    EXPECT_EQ(key.size(), kMaxInitSettingBytes);
    EXPECT_EQ(value, std::string(kMaxInitSettingBytes - 3, 'v') + "...");
  }
  InitSettings small;
  for (int i = 0; i < 1000; ++i) small.settings[absl::StrCat("k", 1000 + i)] = "v";
  const SessionId b = runtime_.OpenSession({101, 0, 0, "b"});
  ASSERT_TRUE(runtime_.Initialize(b, small).ok());
  for (const SessionSnapshot& session : runtime_.Snapshot().sessions) {
    if (session.session.id == b) EXPECT_EQ(session.session.config.size(), kMaxInitSettings);
  }
}

TEST_F(RuntimeTest, DevicesComeUpWithTheFirstHostReferenceAndGoDownWithTheLast) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  SessionId b = runtime_.OpenSession({101, 0, 0, "b"});
  EXPECT_FALSE(DeviceUp(0));
  ASSERT_TRUE(runtime_.Initialize(a, {}).ok());
  EXPECT_TRUE(DeviceUp(0));
  EXPECT_TRUE(DeviceUp(1));
  ASSERT_TRUE(runtime_.Initialize(b, {}).ok());
  ASSERT_TRUE(Completed([&](Done d) { runtime_.Finalize(a, d); }).ok());
  EXPECT_TRUE(DeviceUp(0));
  ASSERT_TRUE(Completed([&](Done d) { runtime_.Finalize(b, d); }).ok());
  EXPECT_FALSE(DeviceUp(0));
  EXPECT_FALSE(DeviceUp(1));
}

TEST_F(RuntimeTest, ASessionsCommandCanBeSetAfterItOpensButNotAfterItEnds) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "name"});
  runtime_.SetSessionCommand(a, "the command line");
  RuntimeSnapshot snapshot = runtime_.Snapshot();
  ASSERT_EQ(snapshot.sessions.size(), 1u);
  EXPECT_EQ(snapshot.sessions[0].session.peer.command, "the command line");
  EXPECT_TRUE(runtime_.CloseSession(a));
  runtime_.SetSessionCommand(a, "too late");  // nothing to set, nothing made
  EXPECT_TRUE(runtime_.Snapshot().sessions.empty());
}

TEST_F(RuntimeTest, ClosingASessionDropsItsShareOnly) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  SessionId b = runtime_.OpenSession({101, 0, 0, "b"});
  ASSERT_TRUE(runtime_.Initialize(a, {}).ok());
  ASSERT_TRUE(runtime_.AddInitReference(a).ok());
  ASSERT_TRUE(runtime_.Initialize(b, {}).ok());
  ASSERT_TRUE(runtime_.SetDevice(a, 1).ok());
  EXPECT_EQ(runtime_.Snapshot().host_refcount, 3u);
  EXPECT_TRUE(runtime_.CloseSession(a));
  RuntimeSnapshot snapshot = runtime_.Snapshot();
  EXPECT_EQ(snapshot.host_refcount, 1u);
  ASSERT_EQ(snapshot.sessions.size(), 1u);
  EXPECT_EQ(snapshot.sessions[0].session.id, b);
  EXPECT_EQ(snapshot.devices[1].sessions, 0u);
  EXPECT_FALSE(runtime_.CloseSession(a));
  EXPECT_EQ(AclCodeOf(runtime_.InitCount(a).status()), ACL_ERROR_RT_SOCKET_CLOSE);
}

TEST_F(RuntimeTest, AddInitReferenceOnlyWhenInitialized) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  EXPECT_EQ(*runtime_.AddInitReference(a), 0u);
  ASSERT_TRUE(runtime_.Initialize(a, {}).ok());
  EXPECT_EQ(*runtime_.AddInitReference(a), 2u);
  EXPECT_EQ(*runtime_.DropInitReference(a), 1u);
  EXPECT_EQ(*runtime_.InitCount(a), 1u);
}

TEST_F(RuntimeTest, DefaultDeviceMustExist) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  InitSettings settings;
  settings.default_device = 2;
  EXPECT_EQ(AclCodeOf(runtime_.Initialize(a, settings)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(*runtime_.InitCount(a), 0u);
  settings.default_device = 1;
  EXPECT_TRUE(runtime_.Initialize(a, settings).ok());
}

TEST_F(RuntimeTest, DeviceReferencesCountAndReset) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  EXPECT_EQ(AclCodeOf(runtime_.SetDevice(a, 2).status()), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(AclCodeOf(runtime_.SetDevice(a, -1).status()), ACL_ERROR_RT_INVALID_DEVICEID);
  ASSERT_TRUE(runtime_.SetDevice(a, 1).ok());
  ASSERT_TRUE(runtime_.SetDevice(a, 1).ok());
  EXPECT_TRUE(DeviceUp(1));
  EXPECT_FALSE(DeviceUp(0));
  ASSERT_TRUE(Completed([&](Done d) { runtime_.ResetDevice(a, 1, false, d); }).ok());
  EXPECT_EQ(runtime_.Snapshot().sessions[0].session.device_refs.at(1), 1u);
  ASSERT_TRUE(Completed([&](Done d) { runtime_.ResetDevice(a, 1, false, d); }).ok());
  EXPECT_TRUE(runtime_.Snapshot().sessions[0].session.device_refs.empty());
  EXPECT_FALSE(DeviceUp(1));
  ASSERT_TRUE(runtime_.SetDevice(a, 0).ok());
  ASSERT_TRUE(runtime_.SetDevice(a, 0).ok());
  ASSERT_TRUE(Completed([&](Done d) { runtime_.ResetDevice(a, 0, true, d); }).ok());
  EXPECT_TRUE(runtime_.Snapshot().sessions[0].session.device_refs.empty());
}

TEST_F(RuntimeTest, FinalizeReleasesDeviceReferences) {
  SessionId a = runtime_.OpenSession({100, 0, 0, "a"});
  ASSERT_TRUE(runtime_.Initialize(a, {}).ok());
  ASSERT_TRUE(runtime_.SetDevice(a, 0).ok());
  ASSERT_TRUE(Completed([&](Done d) { runtime_.Finalize(a, d); }).ok());
  RuntimeSnapshot snapshot = runtime_.Snapshot();
  EXPECT_TRUE(snapshot.sessions[0].session.device_refs.empty());
  EXPECT_FALSE(snapshot.devices[0].up);
}

TEST_F(RuntimeTest, ConcurrentSessionsKeepAnExactHostCount) {
  constexpr int kThreads = 16;
  constexpr int kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      SessionId id = runtime_.OpenSession({t, 0, 0, "t"});
      for (int r = 0; r < kRounds; ++r) {
        ASSERT_TRUE(runtime_.Initialize(id, {}).ok());
        ASSERT_EQ(*runtime_.AddInitReference(id), 2u);
        ASSERT_EQ(*runtime_.DropInitReference(id), 1u);
        ASSERT_TRUE(Completed([&](Done d) { runtime_.Finalize(id, d); }).ok());
      }
      ASSERT_TRUE(runtime_.Initialize(id, {}).ok());
      if (t % 2 == 0) runtime_.CloseSession(id);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(runtime_.Snapshot().host_refcount, kThreads / 2u);
}

}  // namespace
}  // namespace acld

namespace acld {
namespace {

// Kernels' busy time and the core's timeouts run on a fake clock: they pass
// only when a test advances it.
class RuntimeHandlesTest : public ::testing::Test {
 protected:
  RuntimeHandlesTest() : runtime_(hal::sim::CreateSimBackend({2, 1 << 20, &clock_}), Options()) {
    a_ = runtime_.OpenSession({100, 0, 0, "a"});
    b_ = runtime_.OpenSession({101, 0, 0, "b"});
    context_a_ = *runtime_.SetDevice(a_, 0);
    context_b_ = *runtime_.SetDevice(b_, 0);
  }

  RuntimeOptions Options() {
    RuntimeOptions options;
    options.clock = &clock_;
    return options;
  }

  // Waits until `stream` waits on a kernel on the device: its busy time
  // counts from the clock's time now.
  bool KernelOnDevice(StreamId stream) {
    return Eventually([&] {
      for (const StreamSnapshot& each : runtime_.StreamsSnapshot()) {
        if (each.id == stream) return each.stats.state == "waiting on kernel";
      }
      return false;
    });
  }

  hal::testing::FakeClock clock_;
  Runtime runtime_;
  SessionId a_, b_;
  ContextInfo context_a_, context_b_;
};

// aclrtSynchronizeDevice waits for every stream of the device through the
// tasks it had at the call (one stream after another, so that a call holds
// one waiter at a time), whatever order they finish in; later tasks do not
// hold it.
TEST_F(RuntimeHandlesTest, SynchronizeDeviceWaitsForEveryStreamsTasksAtTheCall) {
  std::vector<StreamId> streams;
  std::vector<NotifyId> gates;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(*runtime_.CreateStream(a_, context_a_.context, 0, 0));
    gates.push_back(*runtime_.CreateNotify(a_, 0));
    ASSERT_TRUE(runtime_.WaitAndResetNotify(a_, gates[i], streams[i], 0, 0).ok());
  }
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<absl::Status>();
  runtime_.SynchronizeDevice(a_, 0, absl::InfiniteDuration(), [done, status](absl::Status s) {
    *status = s;
    done->Notify();
  });
  const NotifyId never = *runtime_.CreateNotify(a_, 0);
  ASSERT_TRUE(runtime_.WaitAndResetNotify(a_, never, streams[0], 0, 0).ok());  // after the call
  const StreamId signals = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  for (int i = 2; i >= 0; --i) {
    EXPECT_FALSE(done->HasBeenNotified()) << "stream " << i << " has not finished";
    ASSERT_TRUE(runtime_.RecordNotify(a_, gates[i], signals, 0).ok());
    if (i > 0) ASSERT_TRUE(Eventually([&] { return *runtime_.StreamIdle(a_, streams[i]); }));
  }
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(status->ok()) << *status;
}

// Another process's synchronization on an IPC event whose owner destroys
// it before the record ran is not told the record ran.
TEST_F(RuntimeHandlesTest, AnOpenersWaitOnADestroyedEventSaysItsRecordDidNotRun) {
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  const NotifyId gate = *runtime_.CreateNotify(a_, 0);
  ASSERT_TRUE(runtime_.WaitAndResetNotify(a_, gate, stream, 0, 0).ok());
  const EventId event = *runtime_.CreateEvent(a_, 0, ACL_EVENT_IPC);
  const std::string key = *runtime_.ShareEvent(a_, event);
  const Runtime::OpenedEvent opened = *runtime_.OpenSharedEvent(b_, key);
  ASSERT_TRUE(runtime_.RecordEvent(a_, event, stream, 0).ok());  // behind the gate
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<absl::Status>();
  runtime_.SynchronizeEvent(b_, opened.id, absl::InfiniteDuration(), [done, status](absl::Status s) {
    *status = s;
    done->Notify();
  });
  EXPECT_FALSE(done->HasBeenNotified());
  ASSERT_TRUE(runtime_.DestroyEvent(a_, event).ok());
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(AclCodeOf(*status), ACL_ERROR_RT_IPC_ERROR) << *status;
}

TEST_F(RuntimeHandlesTest, AnotherSessionsHandlesAreRefused) {
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  const EventId event = *runtime_.CreateEvent(a_, 0, 0);
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  EXPECT_EQ(AclCodeOf(runtime_.StreamIdle(b_, stream).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(runtime_.QueryEvent(b_, event).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(runtime_.Free(b_, memory)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(runtime_.CreateStream(b_, context_a_.context, 0, 0).status()),
            ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(AclCodeOf(runtime_.LaunchKernel(b_, stream, 0, {"add_one_u32", 1, {memory}}).status()),
            ACL_ERROR_INVALID_PARAM);
  // A kernel on b's own stream aimed at a's memory fails its task.
  ASSERT_TRUE(runtime_.LaunchKernel(b_, context_b_.default_stream, 0, {"write_i32", 1, {memory, 7}})
                  .ok());
  absl::Notification done;
  absl::Status result;
  runtime_.SynchronizeStream(b_, context_b_.default_stream, absl::Seconds(10),
                             [&](absl::Status status) {
                               result = status;
                               done.Notify();
                             });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(result), ACL_ERROR_INVALID_PARAM);
  // a's own use still works.
  EXPECT_TRUE(runtime_.Free(a_, memory).ok());
}

TEST_F(RuntimeHandlesTest, StreamQuotaCountsDefaultStreams) {
  ASSERT_TRUE(runtime_.SetStreamQuota(a_, 3).ok());
  EXPECT_TRUE(runtime_.CreateStream(a_, context_a_.context, 0, 0).ok());
  EXPECT_TRUE(runtime_.CreateStream(a_, context_a_.context, 0, 0).ok());
  absl::Status over = runtime_.CreateStream(a_, context_a_.context, 0, 0).status();
  EXPECT_EQ(AclCodeOf(over), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  EXPECT_NE(over.message().find("quota"), absl::string_view::npos);
  EXPECT_TRUE(runtime_.CreateStream(b_, context_b_.context, 0, 0).ok());  // b is not limited
  EXPECT_FALSE(runtime_.SetStreamQuota(999, 1).ok());
}

TEST_F(RuntimeHandlesTest, MemInfoReflectsQuotaAndUse) {
  ASSERT_TRUE(runtime_.SetMemoryQuota(a_, 4096).ok());
  MemInfo info = *runtime_.GetMemInfo(a_, 0);
  EXPECT_EQ(info.total, 1u << 20);
  EXPECT_EQ(info.free, 4096u);
  ASSERT_TRUE(runtime_.Malloc(a_, 0, 1024).ok());
  EXPECT_EQ(runtime_.GetMemInfo(a_, 0)->free, 3072u);
  EXPECT_EQ(runtime_.GetMemInfo(b_, 0)->free, (1u << 20) - 1024u);
}

TEST_F(RuntimeHandlesTest, ResetToZeroReleasesTheDevicesResources) {
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  ASSERT_TRUE(Completed([&](Done d) { runtime_.ResetDevice(a_, 0, false, d); }).ok());
  EXPECT_FALSE(runtime_.StreamIdle(a_, stream).ok());
  EXPECT_FALSE(runtime_.Free(a_, memory).ok());
  EXPECT_EQ(runtime_.Snapshot().devices[0].used_bytes, 0u);
}

// Reads one uint32 of `session`'s memory at `address` (a synchronous copy).
uint32_t ReadWord(Runtime& runtime, SessionId session, uint64_t address) {
  uint32_t word = 0;
  CopyRequest copy;
  copy.direction = CopyRequest::Direction::kDeviceToHost;
  copy.device_src = address;
  copy.host.data = reinterpret_cast<uint8_t*>(&word);
  copy.count = 4;
  EXPECT_TRUE(runtime.Copy(session, copy).ok());
  return word;
}

TEST_F(RuntimeHandlesTest, ResetWaitsForLaunchedWorkInsteadOfDiscardingIt) {
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  ASSERT_TRUE(runtime_.LaunchKernel(a_, stream, 0, {"spin_add_one_u32", 1, {memory, 200000}}).ok());
  ASSERT_TRUE(KernelOnDevice(stream));
  // A synchronization pending meanwhile hears the truth: the work ran.
  absl::Notification synced;
  absl::Status sync_status = AclStatus(ACL_ERROR_INTERNAL_ERROR, "not yet");
  runtime_.SynchronizeStream(a_, stream, absl::InfiniteDuration(), [&](absl::Status status) {
    sync_status = status;
    synced.Notify();
  });
  auto reset = std::make_shared<absl::Notification>();
  auto reset_status = std::make_shared<absl::Status>();
  runtime_.ResetDevice(a_, 0, true, [reset, reset_status](absl::Status status) {
    *reset_status = std::move(status);
    reset->Notify();
  });
  clock_.Advance(absl::Milliseconds(199));
  EXPECT_FALSE(reset->HasBeenNotified()) << "the reset did not wait for the busy kernel";
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(reset->WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(reset_status->ok()) << *reset_status;
  ASSERT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(sync_status.ok()) << sync_status;
  EXPECT_EQ(runtime_.Snapshot().devices[0].used_bytes, 0u);
}

// Allocations run with no lock of the runtime held (the device clears what
// it hands out): one that a session's end overtakes is given back, not left
// owned by no one.
TEST(RuntimeMemoryTest, AllocationsRacingTheSessionsEndLeaveNothingBehind) {
  Runtime runtime(hal::sim::CreateSimBackend({1, 64 << 20}), RuntimeOptions());
  for (int round = 0; round < 20; ++round) {
    const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
    std::atomic<bool> ended{false};
    std::vector<std::thread> allocators;
    for (int t = 0; t < 3; ++t) {
      allocators.emplace_back([&] {
        for (int i = 0; i < 2000 && !ended.load(); ++i) {
          absl::StatusOr<uint64_t> address = runtime.Malloc(id, 0, 4096);
          if (address.ok()) (void)runtime.Free(id, *address);
          (void)runtime.Malloc(id, 0, 4096);  // kept: the session's end releases it
        }
      });
    }
    absl::SleepFor(absl::Microseconds(200 * round));
    runtime.CloseSession(id);
    ended = true;
    for (std::thread& allocator : allocators) allocator.join();
    EXPECT_TRUE(Eventually([&] { return runtime.Snapshot().devices[0].used_bytes == 0; }))
        << "round " << round << ": " << runtime.Snapshot().devices[0].used_bytes << " bytes left";
  }
}

TEST_F(RuntimeHandlesTest, AFreeRacingABusyKernelWaitsForIt) {
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const StreamId stream = context_a_.default_stream;
  ASSERT_TRUE(runtime_.LaunchKernel(a_, stream, 0, {"spin_add_one_u32", 1, {memory, 100000}}).ok());
  ASSERT_TRUE(runtime_.Free(a_, memory).ok());
  // Freed for the application, still held (and charged) for the kernel.
  EXPECT_EQ(runtime_.Snapshot().devices[0].used_bytes, 512u);
  ASSERT_TRUE(KernelOnDevice(stream));
  clock_.Advance(absl::Milliseconds(100));
  EXPECT_TRUE(Completed([&](Done d) {
                runtime_.SynchronizeStream(a_, stream, absl::InfiniteDuration(), d);
              }).ok());
  EXPECT_TRUE(Eventually([&] { return runtime_.Snapshot().devices[0].used_bytes == 0; }));
}

TEST_F(RuntimeHandlesTest, EndingASessionDiscardsItsWorkAndTellsWaitersSo) {
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const StreamId stream = context_a_.default_stream;
  ASSERT_TRUE(
      runtime_.LaunchKernel(a_, stream, 0, {"spin_add_one_u32", 1, {memory, 60000000}}).ok());
  absl::Notification synced;
  absl::Status sync_status;
  runtime_.SynchronizeStream(a_, stream, absl::InfiniteDuration(), [&](absl::Status status) {
    sync_status = status;
    synced.Notify();
  });
  runtime_.CloseSession(a_);
  ASSERT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(sync_status), ACL_ERROR_RT_SOCKET_CLOSE);
  // The discarded kernel's memory comes back at once, not after its busy time.
  EXPECT_TRUE(Eventually([&] { return runtime_.Snapshot().devices[0].used_bytes == 0; }));
}

TEST_F(RuntimeHandlesTest, AnOpenersWaitOnAnIpcEventEndsWithItsHandleNotWithTheOwnersRecord) {
  // a's record never completes: it sits behind a kernel whose busy time
  // passes only when the (fake) clock is advanced.
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const StreamId stream = context_a_.default_stream;
  const EventId event = *runtime_.CreateEvent(a_, 0, ACL_EVENT_IPC);
  const std::string key = *runtime_.ShareEvent(a_, event);
  ASSERT_TRUE(
      runtime_.LaunchKernel(a_, stream, 0, {"spin_add_one_u32", 1, {memory, 60000000}}).ok());
  ASSERT_TRUE(runtime_.RecordEvent(a_, event, stream, 0).ok());

  // Each of b's waits is answered when b lets the event go: by destroying its
  // handle, then (a second handle) by ending; the owner's event keeps none.
  auto wait_on_opened_handle = [&](absl::Notification& answered) {
    const EventId opened = runtime_.OpenSharedEvent(b_, key)->id;
    runtime_.SynchronizeEvent(b_, opened, absl::InfiniteDuration(),
                              [&answered](absl::Status) { answered.Notify(); });
    return opened;
  };
  absl::Notification answered_by_destroy;
  const EventId opened = wait_on_opened_handle(answered_by_destroy);
  EXPECT_FALSE(answered_by_destroy.HasBeenNotified());
  ASSERT_TRUE(runtime_.DestroyEvent(b_, opened).ok());
  EXPECT_TRUE(answered_by_destroy.WaitForNotificationWithTimeout(absl::Seconds(10)));

  absl::Notification answered_by_end;
  wait_on_opened_handle(answered_by_end);
  runtime_.CloseSession(b_);
  EXPECT_TRUE(answered_by_end.WaitForNotificationWithTimeout(absl::Seconds(10)));

  // a's own wait is a's: it stays until the record completes.
  absl::Notification owners_wait;
  runtime_.SynchronizeEvent(a_, event, absl::InfiniteDuration(),
                            [&owners_wait](absl::Status) { owners_wait.Notify(); });
  EXPECT_FALSE(owners_wait.HasBeenNotified());
  ASSERT_TRUE(KernelOnDevice(stream));
  clock_.Advance(absl::Seconds(61));
  EXPECT_TRUE(owners_wait.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST_F(RuntimeHandlesTest, ABatchOfLaunchesRunsInOrderAndRefusesOnlyItsBadLaunches) {
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const uint64_t others = *runtime_.Malloc(b_, 0, 64);
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  std::vector<Runtime::ThreadKernel> batch = {
      {1, {"add_one_u32", 1, {memory}}},
      {2, {"no_such_kernel", 1, {memory}}},
      {3, {"double_u32", 1, {memory}}},   // (1) * 2
      {4, {"add_one_u32", 0, {memory}}},  // blockDim 0
      {5, {"add_one_u32", 1, {memory}}},  // 2 + 1
      {6, {"double_u32", 1, {memory}}},   // 3 * 2
      {7, {"write_i32", 1, {others, 9}}},  // another session's memory: its task fails
  };
  const std::vector<absl::Status> statuses = runtime_.LaunchKernels(a_, stream, std::move(batch));
  ASSERT_EQ(statuses.size(), 7u);
  EXPECT_TRUE(statuses[0].ok() && statuses[2].ok() && statuses[4].ok() && statuses[5].ok());
  EXPECT_EQ(AclCodeOf(statuses[1]), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(AclCodeOf(statuses[3]), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(statuses[6].ok()) << "a bad range fails the task when it runs, as on a device";
  absl::Notification synced;
  absl::Status sync_status;
  runtime_.SynchronizeStream(a_, stream, absl::Seconds(10), [&](absl::Status status) {
    sync_status = status;
    synced.Notify();
  });
  ASSERT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(sync_status), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(ReadWord(runtime_, a_, memory), 6u) << "the good launches ran in order";
  EXPECT_EQ(ReadWord(runtime_, b_, others), 0u);
  // Another session's stream refuses the whole run.
  const std::vector<absl::Status> refused =
      runtime_.LaunchKernels(b_, stream, {{1, {"add_one_u32", 1, {others}}}});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(AclCodeOf(refused[0]), ACL_ERROR_INVALID_PARAM);
}

TEST_F(RuntimeHandlesTest, AbortDiscardsLaunchedWork) {
  const uint64_t memory = *runtime_.Malloc(a_, 0, 64);
  const StreamId stream = *runtime_.CreateStream(a_, context_a_.context, 0, 0);
  ASSERT_TRUE(
      runtime_.LaunchKernel(a_, stream, 0, {"spin_add_one_u32", 1, {memory, 60000000}}).ok());
  ASSERT_TRUE(runtime_.LaunchKernel(a_, stream, 0, {"add_one_u32", 1, {memory}}).ok());
  absl::Notification synced;
  absl::Status sync_status;
  runtime_.SynchronizeStream(a_, stream, absl::InfiniteDuration(), [&](absl::Status status) {
    sync_status = status;
    synced.Notify();
  });
  ASSERT_TRUE(runtime_.AbortStream(a_, stream).ok());
  ASSERT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(sync_status), ACL_ERROR_RT_STREAM_ABORT);
  EXPECT_EQ(ReadWord(runtime_, a_, memory), 0u);  // neither kernel ran
}

TEST_F(RuntimeHandlesTest, ContextsEventsAndClosingStreamsCountAgainstTheirLimits) {
  ASSERT_TRUE(runtime_.SetStreamQuota(a_, 3).ok());
  // A context brings a default stream: it must respect the stream quota.
  EXPECT_TRUE(runtime_.CreateContext(a_, 0).ok());
  EXPECT_TRUE(runtime_.CreateContext(a_, 0).ok());
  EXPECT_EQ(AclCodeOf(runtime_.CreateContext(a_, 0).status()), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  // A stream still finishing its work after a forced destroy still counts.
  ASSERT_TRUE(runtime_.SetStreamQuota(b_, 2).ok());
  const uint64_t memory = *runtime_.Malloc(b_, 0, 64);
  const StreamId busy = *runtime_.CreateStream(b_, context_b_.context, 0, 0);
  ASSERT_TRUE(runtime_.LaunchKernel(b_, busy, 0, {"spin_add_one_u32", 1, {memory, 300000}}).ok());
  ASSERT_TRUE(KernelOnDevice(busy));
  ASSERT_TRUE(Completed([&](Done d) { runtime_.DestroyStream(b_, busy, true, d); }).ok());
  EXPECT_EQ(AclCodeOf(runtime_.CreateStream(b_, context_b_.context, 0, 0).status()),
            ACL_ERROR_RT_NO_STREAM_RESOURCE);
  clock_.Advance(absl::Milliseconds(300));
  EXPECT_TRUE(Eventually([&] { return runtime_.CreateStream(b_, context_b_.context, 0, 0).ok(); }));
  EXPECT_EQ(ReadWord(runtime_, b_, memory), 1u);  // the force-destroyed stream's kernel ran
}

TEST(RuntimeLimitsTest, ContextAndEventCapsNameTheirFlags) {
  RuntimeOptions options;
  options.default_max_contexts = 2;
  options.default_max_events = 3;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId session = runtime.OpenSession({1, 0, 0, "x"});
  EXPECT_TRUE(runtime.CreateContext(session, 0).ok());
  EXPECT_TRUE(runtime.CreateContext(session, 0).ok());
  absl::Status contexts = runtime.CreateContext(session, 0).status();
  EXPECT_EQ(AclCodeOf(contexts), ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_NE(contexts.message().find("--max_contexts_per_session"), absl::string_view::npos);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(runtime.CreateEvent(session, 0, 0).ok());
  absl::Status events = runtime.CreateEvent(session, 0, 0).status();
  EXPECT_EQ(AclCodeOf(events), ACL_ERROR_RT_NO_EVENT_RESOURCE);
  EXPECT_NE(events.message().find("--max_events_per_session"), absl::string_view::npos);
}

// A process refused a notify for its quota does not take the whitelist's
// place: the entry would stay bound to a session that never held the notify,
// and the same process could not import it in a later session.
TEST(RuntimeLimitsTest, ANotifyImportRefusedForItsQuotaLeavesTheWhitelistAlone) {
  RuntimeOptions options;
  options.default_max_events = 1;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId owner = runtime.OpenSession({1, 0, 0, "owner", 1});
  const NotifyId notify = *runtime.CreateNotify(owner, 0);
  const std::string key = *runtime.ShareNotify(owner, notify, /*pid_validation=*/true);
  ASSERT_TRUE(runtime.SetNotifyImportPids(owner, notify, {getpid()}).ok());
  // This process, as the kernel would name it (a whitelist checks it is still there).
  const PeerInfo importer{getpid(), 0, 0, "importer", *ProcessStartTicks(getpid())};
  const SessionId full = runtime.OpenSession(importer);
  ASSERT_TRUE(runtime.CreateNotify(full, 0).ok());  // all its quota allows
  EXPECT_EQ(AclCodeOf(runtime.ImportNotify(full, key).status()), ACL_ERROR_RT_NO_NOTIFY_RESOURCE);
  runtime.CloseSession(full);
  const SessionId again = runtime.OpenSession(importer);
  absl::StatusOr<Runtime::OpenedNotify> imported = runtime.ImportNotify(again, key);
  EXPECT_TRUE(imported.ok()) << imported.status();
}

// A session outlives its process when a child inherited its connection, and
// by then its pid may be another process's. A whitelist naming that pid
// passes the process that has it now, never the session of the one that
// exited (whose start time was earlier, which alone passed before).
TEST(RuntimeLimitsTest, ASessionWhoseProcessIsGonePassesNoWhitelist) {
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), RuntimeOptions{});
  const uint64_t started = *ProcessStartTicks(getpid());
  ASSERT_GT(started, 1u);
  const SessionId owner = runtime.OpenSession({1, 0, 0, "owner", 1});
  const NotifyId notify = *runtime.CreateNotify(owner, 0);
  const std::string notify_key = *runtime.ShareNotify(owner, notify, /*pid_validation=*/true);
  ASSERT_TRUE(runtime.SetNotifyImportPids(owner, notify, {getpid()}).ok());
  ASSERT_TRUE(runtime.SetDevice(owner, 0).ok());
  const uint64_t memory = *runtime.Malloc(owner, 0, 64);
  const std::string memory_key = *runtime.ExportMemory(owner, memory, 64, /*flags=*/0);
  ASSERT_TRUE(runtime.SetImportPids(owner, memory_key, {getpid()}).ok());
  // An earlier process with this test's pid opened it.
  const SessionId stale = runtime.OpenSession({getpid(), 0, 0, "stale", started - 1});
  EXPECT_EQ(AclCodeOf(runtime.ImportNotify(stale, notify_key).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  EXPECT_EQ(AclCodeOf(runtime.ImportMemory(stale, memory_key).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  const SessionId live = runtime.OpenSession({getpid(), 0, 0, "live", started});
  EXPECT_TRUE(runtime.ImportNotify(live, notify_key).ok());
  EXPECT_TRUE(runtime.ImportMemory(live, memory_key).ok());
}

TEST(RuntimeLimitsTest, QueuedWorkIsBoundedAndReleasedWithTheSession) {
  RuntimeOptions options;
  options.max_queued_bytes_per_session = 64 << 10;
  options.queue_patience = absl::Milliseconds(200);
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId session = runtime.OpenSession({1, 0, 0, "x"});
  const ContextInfo context = *runtime.SetDevice(session, 0);
  const uint64_t memory = *runtime.Malloc(session, 0, 64);
  // A stream that waits forever (a long busy kernel) and a flood behind it.
  ASSERT_TRUE(runtime
                  .LaunchKernel(session, context.default_stream, 0,
                                {"spin_add_one_u32", 1, {memory, 600000000}})
                  .ok());
  int accepted = 0;
  absl::Status refused;
  for (int i = 0; i < 100000 && refused.ok(); ++i) {
    refused = runtime.LaunchKernel(session, context.default_stream, 0, {"add_one_u32", 1, {memory}})
                  .status();
    if (refused.ok()) ++accepted;
  }
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.message().find("--max_queued_bytes_per_session"), absl::string_view::npos);
  EXPECT_LE(runtime.Snapshot().sessions[0].queued_bytes, 2u * (64 << 10));
  EXPECT_GT(accepted, 100);
  runtime.CloseSession(session);
}

TEST(RuntimeBinariesTest, TinyBinariesAndHandlesAreChargedTheirOverheadAndReleased) {
  RuntimeOptions options;
  options.max_binary_bytes_per_session = 64 << 10;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
  const std::string tiny = hal::sim::EncodeSimBinary({{"f", "add_one_u32"}, {"g", "trap"}});
  std::vector<BinaryId> loaded;
  absl::Status refused;
  for (int i = 0; i < 1000 && refused.ok(); ++i) {
    absl::StatusOr<BinaryId> binary = runtime.LoadBinary(id, 0, tiny);
    if (binary.ok()) loaded.push_back(*binary);
    refused = binary.status();
  }
  // Each tiny binary costs its tables too: 64 KiB holds at most 16 of them.
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  ASSERT_FALSE(loaded.empty());
  EXPECT_LE(loaded.size(), 16u);
  // Function handles are charged as well; unloading gives everything back.
  ASSERT_TRUE(runtime.UnloadBinary(id, loaded.back()).ok());
  loaded.pop_back();
  absl::StatusOr<BinaryId> again = runtime.LoadBinary(id, 0, tiny);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(runtime.GetFunction(id, *again, "f").ok());
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes,
            (loaded.size() + 1) * (tiny.size() + 4096) + 256);
  for (BinaryId binary : loaded) ASSERT_TRUE(runtime.UnloadBinary(id, binary).ok());
  ASSERT_TRUE(runtime.UnloadBinary(id, *again).ok());
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes, 0u);
}

// A binary unloaded while launches of it are queued is still held (by the
// launches, until they ran), so it stays charged: loading, launching behind
// a stream that does not drain and unloading, over and over, made acld hold
// binaries without bound.
TEST(RuntimeBinariesTest, AnUnloadedBinaryStaysChargedWhileLaunchesOfItAreQueued) {
  RuntimeOptions options;
  options.max_binary_bytes_per_session = 64 << 10;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
  const ContextInfo context = *runtime.SetDevice(id, 0);
  const uint64_t memory = *runtime.Malloc(id, 0, 64);
  // Holds the stream for about a second.
  ASSERT_TRUE(runtime
                  .LaunchKernel(id, context.default_stream, 0,
                                {"spin_add_one_u32", 1, {memory, 1000000}})
                  .ok());
  const std::string tiny = hal::sim::EncodeSimBinary({{"f", "add_one_u32"}});
  const uint64_t charge = tiny.size() + 4096 + 256;  // the binary, its tables, one handle
  std::string args(8, '\0');
  std::memcpy(args.data(), &memory, sizeof(memory));
  int launched = 0;
  absl::Status refused;
  for (int i = 0; i < 100 && refused.ok(); ++i) {
    absl::StatusOr<BinaryId> binary = runtime.LoadBinary(id, 0, tiny);
    refused = binary.status();
    if (!binary.ok()) break;
    absl::StatusOr<FunctionId> function = runtime.GetFunction(id, *binary, "f");
    if (!function.ok()) {  // its handle did not fit
      refused = function.status();
      ASSERT_TRUE(runtime.UnloadBinary(id, *binary).ok());
      break;
    }
    FunctionLaunch launch;
    launch.function = *function;
    launch.block_dim = 1;
    launch.args = args;
    ASSERT_TRUE(runtime.LaunchFunction(id, context.default_stream, 0, launch).ok());
    ASSERT_TRUE(runtime.UnloadBinary(id, *binary).ok());
    ++launched;
  }
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION) << refused;
  EXPECT_NE(refused.message().find("--max_binary_bytes_per_session"), std::string::npos);
  EXPECT_EQ(static_cast<uint64_t>(launched), (64u << 10) / charge);
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes, launched * charge);
  // Once the launches ran, nothing holds the binaries: their charge is back.
  EXPECT_TRUE(Eventually([&] { return runtime.Snapshot().sessions[0].binary_bytes == 0; },
                         absl::Seconds(20)));
  EXPECT_TRUE(runtime.LoadBinary(id, 0, tiny).ok());
  runtime.CloseSession(id);
}

// A load is charged before acld copies the binary out of the process's
// memory: loads under way at once cannot together pass the limit each
// alone respects (each held a copy of up to 256 MiB on a pool thread).
TEST(RuntimeBinariesTest, LoadsUnderWayAreChargedBeforeTheyCopy) {
  RuntimeOptions options;
  options.max_binary_bytes_per_session = 64 << 10;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
  absl::StatusOr<std::unique_ptr<BinaryCharges::Held>> first =
      runtime.ReserveBinaryLoad(id, 0, 40 << 10);
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::Status second = runtime.ReserveBinaryLoad(id, 0, 40 << 10).status();
  EXPECT_EQ(AclCodeOf(second), ACL_ERROR_RT_MEMORY_ALLOCATION) << second;
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes, (40u << 10) + 4096);
  // The reservation becomes the binary's charge, not a second one.
  const std::string tiny = hal::sim::EncodeSimBinary({{"f", "add_one_u32"}});
  ASSERT_TRUE(runtime.LoadBinary(id, 0, tiny, *std::move(first)).ok());
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes, (40u << 10) + 4096);
  // A reservation given up gives its charge back.
  { ASSERT_TRUE(runtime.ReserveBinaryLoad(id, 0, 10 << 10).ok()); }
  EXPECT_EQ(runtime.Snapshot().sessions[0].binary_bytes, (40u << 10) + 4096);
  runtime.CloseSession(id);
}

TEST(RuntimeBinariesTest, AKernelNameIsBoundedBeforeItIsLookedUp) {
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), RuntimeOptions());
  const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
  const std::string tiny = hal::sim::EncodeSimBinary({{"f", "add_one_u32"}});
  const BinaryId binary = *runtime.LoadBinary(id, 0, tiny);
  const absl::Status long_name = runtime.GetFunction(id, binary, std::string(4097, 'f')).status();
  EXPECT_EQ(AclCodeOf(long_name), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(long_name.message().find("at most 4096"), std::string::npos) << long_name;
  EXPECT_EQ(AclCodeOf(runtime.GetFunction(id, binary, std::string(4096, 'f')).status()),
            ACL_ERROR_RT_KERNEL_LOOKUP);
  // Unloaded: the handle is gone, and so is any lookup of it.
  ASSERT_TRUE(runtime.UnloadBinary(id, binary).ok());
  EXPECT_EQ(AclCodeOf(runtime.GetFunction(id, binary, "f").status()), ACL_ERROR_INVALID_PARAM);
  runtime.CloseSession(id);
}

// The sessions of one uid are bounded together: a user cannot multiply the
// per-session limit by opening more processes. Another uid is not affected,
// and a session's end gives its share back.
TEST(RuntimeBinariesTest, TheSessionsOfAUidHoldAtMostTheirLimitTogether) {
  RuntimeOptions options;
  options.max_binary_bytes_per_session = 64 << 10;
  options.max_binary_bytes_per_uid = 96 << 10;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId first = runtime.OpenSession({100, 1000, 0, "a"});
  const SessionId second = runtime.OpenSession({101, 1000, 0, "b"});
  const SessionId other = runtime.OpenSession({102, 1001, 0, "c"});
  const std::string binary(20 << 10, '\0');  // only its size matters for the check
  ASSERT_TRUE(runtime.ReserveBinaryLoad(first, 0, binary.size()).ok());
  const std::string tiny = hal::sim::EncodeSimBinary({{"f", "add_one_u32"}});
  auto load_until_refused = [&](SessionId session) {
    absl::Status refused;
    int loaded = 0;
    for (int i = 0; i < 100 && refused.ok(); ++i) {
      refused = runtime.LoadBinary(session, 0, tiny).status();
      loaded += refused.ok();
    }
    return std::make_pair(loaded, refused);
  };
  const uint64_t charge = tiny.size() + 4096;
  const auto [first_loaded, first_refused] = load_until_refused(first);
  EXPECT_EQ(static_cast<uint64_t>(first_loaded), (64u << 10) / charge);
  EXPECT_NE(first_refused.message().find("--max_binary_bytes_per_session"), std::string::npos);
  const auto [second_loaded, second_refused] = load_until_refused(second);
  EXPECT_EQ(static_cast<uint64_t>(first_loaded + second_loaded), (96u << 10) / charge);
  EXPECT_EQ(AclCodeOf(second_refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(second_refused.message().find("--max_binary_bytes_per_uid"), std::string::npos)
      << second_refused;
  EXPECT_NE(second_refused.message().find("uid 1000"), std::string::npos) << second_refused;
  EXPECT_EQ(AclCodeOf(runtime.ReserveBinaryLoad(second, 0, binary.size()).status()),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(runtime.ReserveBinaryLoad(other, 0, binary.size()).ok());
  RuntimeSnapshot snapshot = runtime.Snapshot();
  EXPECT_EQ(snapshot.max_binary_bytes_per_tenant, 96u << 10);
  ASSERT_EQ(snapshot.tenants.size(), 2u);
  EXPECT_EQ(snapshot.tenants[0].tenant, Tenant(1000, nullptr));
  EXPECT_EQ(snapshot.tenants[0].sessions, 2u);
  EXPECT_EQ(snapshot.tenants[0].binary_bytes, (first_loaded + second_loaded) * charge);
  EXPECT_EQ(snapshot.tenants[1].binary_bytes, 0u);
  runtime.CloseSession(first);
  EXPECT_TRUE(runtime.ReserveBinaryLoad(second, 0, binary.size()).ok());
  runtime.CloseSession(second);
  snapshot = runtime.Snapshot();
  ASSERT_EQ(snapshot.tenants.size(), 1u);  // nothing of uid 1000 is left
  EXPECT_EQ(snapshot.tenants[0].tenant, Tenant(1001, nullptr));
  runtime.CloseSession(other);
}

// Streams, contexts and events (notifies counted with them) are bounded for
// all sessions of a uid together as well as per session: per session alone,
// one user's 256 sessions could make acld hold 3.7 GiB of them. Another uid
// is not affected, the refusals name the flag and the uid, and a session's
// end gives its share back.
TEST(RuntimeTenantHandlesTest, TheSessionsOfAUidHoldAtMostTheirHandlesTogether) {
  RuntimeOptions options;
  options.default_max_streams = 4;  // each session's default stream included
  options.default_max_contexts = 3;
  options.default_max_events = 3;
  options.max_streams_per_uid = 6;
  options.max_contexts_per_uid = 4;
  options.max_events_per_uid = 5;
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), options);
  const SessionId first = runtime.OpenSession({100, 1000, 0, "a"});
  const SessionId second = runtime.OpenSession({101, 1000, 0, "b"});
  const SessionId other = runtime.OpenSession({102, 1001, 0, "c"});
  std::map<SessionId, ContextId> contexts;
  for (SessionId session : {first, second, other}) {
    contexts[session] = runtime.SetDevice(session, 0)->context;
  }
  // How many of a kind a session makes until refused (at most 10), and the refusal.
  auto until_refused = [&](const std::function<absl::Status()>& make) {
    int made = 0;
    absl::Status refused;
    for (; made < 10; ++made) {
      refused = make();
      if (!refused.ok()) break;
    }
    return std::make_pair(made, refused);
  };
  auto streams = [&](SessionId session) {
    return until_refused(
        [&] { return runtime.CreateStream(session, contexts[session], 0, 0).status(); });
  };
  auto created_contexts = [&](SessionId session) {
    return until_refused([&] { return runtime.CreateContext(session, 0).status(); });
  };
  auto events = [&](SessionId session, int notifies) {
    return until_refused([&, notifies]() mutable {
      return notifies-- > 0 ? runtime.CreateNotify(session, 0).status()
                            : runtime.CreateEvent(session, 0, 0).status();
    });
  };
  auto expect_uid_refusal = [](const absl::Status& refused, const std::string& flag) {
    EXPECT_NE(refused.message().find(flag), std::string::npos) << refused;
    EXPECT_NE(refused.message().find("uid 1000"), std::string::npos) << refused;
  };

  // Events: 3 in the first session (its own limit), 2 more in the second
  // (a notify first: they count together).
  EXPECT_EQ(events(first, 0).first, 3);
  const auto [second_events, events_refused] = events(second, 1);
  EXPECT_EQ(second_events, 2);
  EXPECT_EQ(AclCodeOf(events_refused), ACL_ERROR_RT_NO_EVENT_RESOURCE);
  expect_uid_refusal(events_refused, "--max_events_per_uid");
  // Contexts (default contexts not counted; each new one has a default
  // stream, which counts as a stream): 3, then 1.
  EXPECT_EQ(created_contexts(first).first, 3);
  const auto [second_contexts, contexts_refused] = created_contexts(second);
  EXPECT_EQ(second_contexts, 1);
  EXPECT_EQ(AclCodeOf(contexts_refused), ACL_ERROR_RT_OVER_LIMIT);
  expect_uid_refusal(contexts_refused, "--max_contexts_per_uid");
  // Streams: each session holds 1 + its contexts' defaults (4 and 2 now):
  // none more for the first (its own limit), none for the second (6 in all).
  const auto [second_streams, streams_refused] = streams(second);
  EXPECT_EQ(second_streams, 0);
  EXPECT_EQ(AclCodeOf(streams_refused), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  expect_uid_refusal(streams_refused, "--max_streams_per_uid");

  // Another uid has its own share.
  EXPECT_EQ(events(other, 0).first, 3);
  EXPECT_EQ(created_contexts(other).first, 3);
  RuntimeSnapshot snapshot = runtime.Snapshot();
  EXPECT_EQ(snapshot.max_streams_per_tenant, 6u);
  EXPECT_EQ(snapshot.max_contexts_per_tenant, 4u);
  EXPECT_EQ(snapshot.max_events_per_tenant, 5u);
  ASSERT_EQ(snapshot.tenants.size(), 2u);
  EXPECT_EQ(snapshot.tenants[0].tenant, Tenant(1000, nullptr));
  EXPECT_EQ(snapshot.tenants[0].streams, 6u);
  EXPECT_EQ(snapshot.tenants[0].contexts, 4u);
  EXPECT_EQ(snapshot.tenants[0].events, 5u);
  EXPECT_EQ(snapshot.tenants[1].events, 3u);

  // The first session's end gives its share back.
  runtime.CloseSession(first);
  EXPECT_EQ(events(second, 0).first, 1) << "its own limit of 3 now";
  EXPECT_TRUE(runtime.CreateContext(second, 0).ok());
  EXPECT_TRUE(runtime.CreateStream(second, contexts[second], 0, 0).ok());
  runtime.CloseSession(second);
  runtime.CloseSession(other);

  // A quota group's processes are one tenant whatever their uids; its own
  // stream cap replaces the per-uid one (6 here), as its session cap does.
  QuotaGroupSpec spec;
  spec.devices = {0};
  spec.memory_limits = {0};
  spec.max_streams = 7;
  auto group = std::make_shared<QuotaGroup>("0123456789abcdef", spec);
  const SessionId pod_a = runtime.OpenSession({103, 0, 0, "d"}, group);
  const SessionId pod_b = runtime.OpenSession({104, 2000, 0, "e"}, group);
  for (SessionId session : {pod_a, pod_b}) {
    contexts[session] = runtime.SetDevice(session, 0)->context;
  }
  EXPECT_EQ(streams(pod_a).first, 3) << "its own limit of 4";
  const auto [pod_streams, pod_refused] = streams(pod_b);
  EXPECT_EQ(pod_streams, 2) << "7 for the group: 4 + 1 + 2";
  EXPECT_NE(pod_refused.message().find("aclctl group create --streams"), std::string::npos)
      << pod_refused;
  EXPECT_EQ(events(pod_a, 0).first, 3);
  const auto [pod_events, pod_events_refused] = events(pod_b, 0);
  EXPECT_EQ(pod_events, 2) << "the per-uid 5, for the group's processes together";
  EXPECT_NE(pod_events_refused.message().find("quota group"), std::string::npos)
      << pod_events_refused;
  runtime.CloseSession(pod_a);
  runtime.CloseSession(pod_b);
}

// A binary larger than the device loads is refused by its size, before the
// daemon copies it out of the process's shared memory.
TEST(RuntimeBinariesTest, ABinaryTooLargeForTheDeviceIsRefusedByItsSize) {
  Runtime runtime(hal::sim::CreateSimBackend({1, 1 << 20}), RuntimeOptions{});
  const SessionId id = runtime.OpenSession({100, 0, 0, "a"});
  const uint64_t device_limit = hal::sim::kMaxSimBinaryBytes;
  EXPECT_TRUE(runtime.ReserveBinaryLoad(id, 0, device_limit).ok());
  for (uint64_t bytes : {device_limit + 1, uint64_t{255} << 20, ~uint64_t{0}}) {
    absl::Status refused = runtime.ReserveBinaryLoad(id, 0, bytes).status();
    EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_INVALID_PARAM) << bytes;
    EXPECT_NE(refused.message().find("loads at most"), absl::string_view::npos) << refused;
  }
  EXPECT_EQ(AclCodeOf(runtime.ReserveBinaryLoad(id, 7, 10).status()), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(AclCodeOf(runtime.LoadBinary(id, 0, std::string(device_limit + 1, 'x')).status()),
            ACL_ERROR_INVALID_PARAM);
}

// A runtime whose `devices` sim devices state `numbers` of streams and
// events, each tenant holding `percent` of them (--device_share_per_uid).
std::unique_ptr<Runtime> RuntimeWithDeviceNumbers(int32_t devices,
                                                  hal::DeviceObjectLimits numbers,
                                                  uint32_t percent,
                                                  RuntimeOptions options = {}) {
  hal::sim::SimOptions sim{devices, 1 << 20};
  sim.device_objects = numbers;
  options.device_share_per_uid = percent;
  return std::make_unique<Runtime>(hal::sim::CreateSimBackend(sim), options);
}

// A device with a fixed number of streams and events refuses the one past
// it whoever asks: one user holding them all would leave every other user
// none. All sessions of a uid hold at most --device_share_per_uid of each
// device's number together, default streams included; another uid and
// another device have their own; a session's end gives its share back.
TEST(RuntimeTenantHandlesTest, AUidHoldsAtMostItsShareOfADevicesStreamsAndEvents) {
  const std::unique_ptr<Runtime> owned = RuntimeWithDeviceNumbers(2, {8, 8}, 25);  // 2 of each
  Runtime& runtime = *owned;
  const SessionId first = runtime.OpenSession({100, 1000, 0, "a"});
  const SessionId second = runtime.OpenSession({101, 1000, 0, "b"});
  const SessionId other = runtime.OpenSession({102, 1001, 0, "c"});
  auto expect_share_refusal = [](const absl::Status& refused, int32_t code,
                                 const std::string& what) {
    EXPECT_EQ(AclCodeOf(refused), code) << refused;
    for (const std::string& part : {std::string("--device_share_per_uid=25%"),
                                    std::string("uid 1000"), "at most 2 of this device's 8 " + what}) {
      EXPECT_NE(refused.message().find(part), std::string::npos) << part << ": " << refused;
    }
  };

  // The first session's default stream and one more; none for the uid's
  // second session, not even a default stream.
  const ContextId context = runtime.SetDevice(first, 0)->context;
  ASSERT_TRUE(runtime.CreateStream(first, context, 0, 0).ok());
  expect_share_refusal(runtime.CreateStream(first, context, 0, 0).status(),
                       ACL_ERROR_RT_NO_STREAM_RESOURCE, "streams");
  expect_share_refusal(runtime.SetDevice(second, 0).status(), ACL_ERROR_RT_NO_STREAM_RESOURCE,
                       "streams");
  EXPECT_TRUE(runtime.SetDevice(second, 1).ok()) << "device 1 has its own share";
  // Events: two on device 0 for the uid, whichever session makes them.
  ASSERT_TRUE(runtime.CreateEvent(first, 0, 0).ok());
  ASSERT_TRUE(runtime.CreateEvent(second, 0, 0).ok());
  expect_share_refusal(runtime.CreateEvent(second, 0, 0).status(),
                       ACL_ERROR_RT_NO_EVENT_RESOURCE, "events");
  EXPECT_TRUE(runtime.CreateEvent(second, 1, 0).ok());

  // Another uid has its own share.
  const ContextId others = runtime.SetDevice(other, 0)->context;
  EXPECT_TRUE(runtime.CreateStream(other, others, 0, 0).ok());
  EXPECT_TRUE(runtime.CreateEvent(other, 0, 0).ok());

  {
    // Scoped: a snapshot's sessions share their handles, streams included.
    const RuntimeSnapshot snapshot = runtime.Snapshot();
    EXPECT_EQ(snapshot.device_share_per_tenant, 25u);
    EXPECT_EQ(snapshot.devices[0].tenant_share.streams, 2u);
    EXPECT_EQ(snapshot.devices[0].tenant_share.events, 2u);
    ASSERT_EQ(snapshot.tenants.size(), 2u);
    EXPECT_EQ(snapshot.tenants[0].tenant, Tenant(1000, nullptr));
    EXPECT_EQ(snapshot.tenants[0].streams_on_device,
              (std::map<int32_t, uint64_t>{{0, 2}, {1, 1}}));
    EXPECT_EQ(snapshot.tenants[0].events_on_device,
              (std::map<int32_t, uint64_t>{{0, 2}, {1, 1}}));
  }

  // The first session's end gives its streams and event back to the uid,
  // once its streams' abort drained them.
  runtime.CloseSession(first);
  EXPECT_TRUE(Eventually([&] { return runtime.SetDevice(second, 0).ok(); }))
      << runtime.SetDevice(second, 0).status();
  EXPECT_TRUE(Eventually([&] { return runtime.CreateEvent(second, 0, 0).ok(); }));
  runtime.CloseSession(second);
  runtime.CloseSession(other);
}

// At 100% only the device's own number holds.
TEST(RuntimeTenantHandlesTest, AWholeShareLeavesOnlyTheDevicesOwnNumber) {
  const std::unique_ptr<Runtime> owned = RuntimeWithDeviceNumbers(1, {3, 0}, 100);
  Runtime& runtime = *owned;
  const SessionId session = runtime.OpenSession({100, 1000, 0, "a"});
  const ContextId context = runtime.SetDevice(session, 0)->context;
  EXPECT_TRUE(runtime.CreateStream(session, context, 0, 0).ok());
  EXPECT_TRUE(runtime.CreateStream(session, context, 0, 0).ok());
  const absl::Status refused = runtime.CreateStream(session, context, 0, 0).status();
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  EXPECT_NE(refused.message().find("--sim_device_streams"), std::string::npos) << refused;
  EXPECT_EQ(runtime.Snapshot().devices[0].tenant_share.streams, 0u);
  runtime.CloseSession(session);
}

// aclrtGetStreamAvailableNum / aclrtGetEventAvailNum: the tightest of the
// session's quota, its uid's, its uid's share of the device and what the
// device's own number leaves for everyone.
TEST(RuntimeTenantHandlesTest, WhatIsAvailableIsWhatTheTightestLimitLeaves) {
  RuntimeOptions options;
  options.default_max_streams = 3;
  options.max_events_per_uid = 6;
  const std::unique_ptr<Runtime> owned =
      RuntimeWithDeviceNumbers(2, {8, 8}, 50, options);  // 4 of each
  Runtime& runtime = *owned;
  const SessionId mine = runtime.OpenSession({100, 1000, 0, "a"});
  const SessionId theirs = runtime.OpenSession({101, 1001, 0, "b"});
  const SessionId theirs_too = runtime.OpenSession({102, 1001, 0, "c"});
  auto available = [&](SessionId session, int32_t device = 0) {
    absl::StatusOr<ObjectsAvailable> left = runtime.GetObjectsAvailable(session, device);
    EXPECT_TRUE(left.ok()) << left.status();
    return left.ok() ? std::make_pair(left->streams, left->events) : std::make_pair(0u, 0u);
  };
  const ContextId context = runtime.SetDevice(mine, 0)->context;
  // Streams: its own quota (3 - 1); events: the uid's 6 before the share's 4.
  EXPECT_EQ(available(mine), std::make_pair(2u, 4u));
  ASSERT_TRUE(runtime.CreateEvent(mine, 0, 0).ok());
  ASSERT_TRUE(runtime.CreateNotify(mine, 0).ok());  // counts for the uid, not the device
  EXPECT_EQ(available(mine), std::make_pair(2u, 3u));
  ASSERT_TRUE(runtime.CreateEvent(mine, 1, 0).ok());
  ASSERT_TRUE(runtime.CreateEvent(mine, 1, 0).ok());
  EXPECT_EQ(available(mine), std::make_pair(2u, 2u)) << "the uid's 6: 4 held";

  // Another uid: 4 streams of the device's 8, then its share is spent.
  const ContextId their_context = runtime.SetDevice(theirs, 0)->context;
  ASSERT_TRUE(runtime.CreateStream(theirs, their_context, 0, 0).ok());
  ASSERT_TRUE(runtime.CreateStream(theirs, their_context, 0, 0).ok());
  ASSERT_TRUE(runtime.SetDevice(theirs_too, 0).ok());
  EXPECT_EQ(available(theirs_too).first, 0u) << "its uid's share";
  EXPECT_EQ(available(theirs_too, 1).first, 2u) << "device 1: its own quota";
  // The device's own number: 5 of 8 held leave 3, its share 3 too, and its
  // quota (raised to 8) more; another uid's stream takes one of the 3.
  EXPECT_EQ(available(mine).first, 2u) << "its quota";
  ASSERT_TRUE(runtime.SetStreamQuota(mine, 8).ok());
  EXPECT_EQ(available(mine).first, 3u);
  const SessionId stranger = runtime.OpenSession({103, 1002, 0, "d"});
  ASSERT_TRUE(runtime.SetDevice(stranger, 0).ok());
  EXPECT_EQ(available(mine).first, 2u) << "the device's 8: 6 held";
  ASSERT_TRUE(runtime.CreateStream(mine, context, 0, 0).ok());
  EXPECT_EQ(available(mine).first, 1u);
  runtime.CloseSession(stranger);

  EXPECT_EQ(AclCodeOf(runtime.GetObjectsAvailable(mine, 7).status()),
            ACL_ERROR_RT_INVALID_DEVICEID);
  for (SessionId session : {mine, theirs, theirs_too}) runtime.CloseSession(session);

  // Nothing that holds: as many as a uint32_t says.
  RuntimeOptions unlimited;
  unlimited.default_max_streams = 0;
  unlimited.default_max_events = 0;
  unlimited.max_streams_per_uid = 0;
  unlimited.max_events_per_uid = 0;
  Runtime open_runtime(hal::sim::CreateSimBackend({1, 1 << 20}), unlimited);
  const SessionId session = open_runtime.OpenSession({100, 1000, 0, "a"});
  absl::StatusOr<ObjectsAvailable> all = open_runtime.GetObjectsAvailable(session, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->streams, UINT32_MAX);
  EXPECT_EQ(all->events, UINT32_MAX);
  open_runtime.CloseSession(session);
}

// What counts is what holds the device's objects, not the handles: an event
// destroyed while a record of it waits in a held stream keeps its device
// event, and so its place, until the record let go of it; a destroyed stream
// keeps its place until its work drained, after its session's end too.
TEST(RuntimeTenantHandlesTest, ADeviceObjectCountsUntilItsLastTaskLetsGoOfIt) {
  const std::unique_ptr<Runtime> owned = RuntimeWithDeviceNumbers(1, {8, 8}, 25);  // 2 of each
  Runtime& runtime = *owned;
  const SessionId session = runtime.OpenSession({100, 1000, 0, "a"});
  const ContextInfo context = *runtime.SetDevice(session, 0);
  const StreamId held = *runtime.CreateStream(session, context.context, 0, 0);
  const NotifyId notify = *runtime.CreateNotify(session, 0);
  ASSERT_TRUE(runtime.WaitAndResetNotify(session, notify, held, 0, 0).ok());
  const EventId event = *runtime.CreateEvent(session, 0, 0);
  ASSERT_TRUE(runtime.RecordEvent(session, event, held, 0).ok());
  ASSERT_TRUE(runtime.DestroyEvent(session, event).ok());
  auto held_on_device = [&](int kind) {
    const RuntimeSnapshot snapshot = runtime.Snapshot();
    const auto& counts = kind == 0 ? snapshot.tenants.at(0).streams_on_device
                                   : snapshot.tenants.at(0).events_on_device;
    auto it = counts.find(0);
    return it == counts.end() ? uint64_t{0} : it->second;
  };
  EXPECT_EQ(held_on_device(1), 1u) << "the destroyed event's record still holds it";
  ASSERT_TRUE(runtime.CreateEvent(session, 0, 0).ok());
  EXPECT_EQ(AclCodeOf(runtime.CreateEvent(session, 0, 0).status()),
            ACL_ERROR_RT_NO_EVENT_RESOURCE);
  // A destroyed stream counts while its work drains: until the notify it
  // waits for is recorded (on the default stream), which also runs the
  // destroyed event's record and lets go of it.
  absl::Notification destroyed;
  runtime.DestroyStream(session, held, /*force=*/false,
                        [&](const absl::Status&) { destroyed.Notify(); });
  EXPECT_EQ(held_on_device(0), 2u);
  EXPECT_EQ(AclCodeOf(runtime.CreateStream(session, context.context, 0, 0).status()),
            ACL_ERROR_RT_NO_STREAM_RESOURCE);
  ASSERT_TRUE(runtime.RecordNotify(session, notify, context.default_stream, 0).ok());
  ASSERT_TRUE(destroyed.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_TRUE(Eventually([&] { return held_on_device(0) == 1 && held_on_device(1) == 1; }));
  const StreamId held_again = *runtime.CreateStream(session, context.context, 0, 0);
  ASSERT_TRUE(runtime.WaitAndResetNotify(session, notify, held_again, 0, 0).ok());
  // The session ends; its stream held again drains only once the notify is
  // recorded, which nothing will do: the abort discards its wait.
  runtime.CloseSession(session);
  ASSERT_TRUE(Eventually([&] { return runtime.Snapshot().tenants.empty(); }))
      << "every stream and event gone with the session's end";
  const SessionId next = runtime.OpenSession({101, 1000, 0, "b"});
  const ContextId next_context = runtime.SetDevice(next, 0)->context;
  EXPECT_TRUE(runtime.CreateStream(next, next_context, 0, 0).ok()) << "the share is back";
  EXPECT_TRUE(runtime.CreateEvent(next, 0, 0).ok());
  EXPECT_TRUE(runtime.CreateEvent(next, 0, 0).ok());
  runtime.CloseSession(next);
}

}  // namespace
}  // namespace acld
