#include "hal/sim/sim_device.h"

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_event.h"
#include "hal/sim/sim_kernels.h"
#include "hal/sim/sim_memory.h"
#include "hal/sim/sim_reduce.h"
#include "hal/testing/stream_reports.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {
namespace {

// Resolves addresses inside one buffer only.
class OneBuffer : public MemoryResolver {
 public:
  explicit OneBuffer(const DeviceBuffer& buffer) : buffer_(buffer) {}
  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    if (address < buffer_.address || address - buffer_.address + bytes > buffer_.size) {
      return absl::OutOfRangeError("outside");
    }
    return SimBytes(DeviceSpan{buffer_, address - buffer_.address});
  }

 private:
  DeviceBuffer buffer_;
};

const Kernel* Kernel(const std::string& name) { return BuiltinKernels().at(name).get(); }

TEST(SimDeviceTest, AllocatesWithinCapacityAndReusesFreedAddresses) {
  SimDevice device(1, 4096);
  absl::StatusOr<DeviceBuffer> a = device.Allocate(1000);
  ASSERT_TRUE(a.ok());
  EXPECT_NE(a->address & kAddressBit, 0u);
  EXPECT_TRUE(device.info().addresses.Contains(a->address));
  EXPECT_EQ((a->address >> kDeviceIdShift) & 0xff, 1u);
  EXPECT_EQ(device.used_bytes(), 1024u);
  EXPECT_FALSE(device.Allocate(4096).ok());
  EXPECT_FALSE(device.Allocate(0).ok());
  device.Free(*a);
  EXPECT_EQ(device.used_bytes(), 0u);
  absl::StatusOr<DeviceBuffer> b = device.Allocate(1000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->address, a->address) << "a freed range is taken again";
  device.Free(*b);
  // Allocations and reservations share the window and take back what the
  // others gave (sim_address_window_test: a loop never uses it up).
  SimDevice big(0, uint64_t{64} << 20);
  const DeviceBuffer probe = *big.Allocate(uint64_t{8} << 20);
  const uint64_t first = probe.address;
  big.Free(probe);
  for (int round = 0; round < 100; ++round) {
    absl::StatusOr<uint64_t> reserved = big.ReserveAddresses(uint64_t{2} << 20, uint64_t{2} << 20);
    ASSERT_TRUE(reserved.ok()) << reserved.status();
    big.ReleaseAddresses(*reserved, uint64_t{2} << 20);
    absl::StatusOr<DeviceBuffer> all = big.Allocate((uint64_t{64} << 20) - 512 * (round % 7));
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->address, first) << "round " << round;
    big.Free(*all);
  }
}

TEST(SimDeviceTest, KernelsDoWhatTheSpecSays) {
  SimDevice device(0, 1 << 20);
  DeviceBuffer buffer = *device.Allocate(64);
  uint8_t* bytes = SimBytes(DeviceSpan{buffer, 0});
  OneBuffer memory(buffer);
  ASSERT_TRUE(Kernel("add_one_u32")->Run(4, {buffer.address}, memory).ok());
  ASSERT_TRUE(Kernel("add_one_u32")->Run(2, {buffer.address}, memory).ok());
  uint32_t values[4];
  std::memcpy(values, bytes, sizeof(values));
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], 2u);
  EXPECT_EQ(values[2], 1u);
  EXPECT_EQ(values[3], 1u);

  ASSERT_TRUE(Kernel("double_u32")->Run(3, {buffer.address}, memory).ok());
  std::memcpy(values, bytes, sizeof(values));
  EXPECT_EQ(values[0], 4u);
  EXPECT_EQ(values[2], 2u);
  EXPECT_EQ(values[3], 1u);  // past the blocks: untouched
  EXPECT_FALSE(Kernel("double_u32")->Run(17, {buffer.address}, memory).ok());

  ASSERT_TRUE(Kernel("fill_u32")->Run(1, {buffer.address, 7, 16}, memory).ok());
  std::memcpy(values, bytes + 48, sizeof(values));
  EXPECT_EQ(values[3], 7u);
  EXPECT_FALSE(Kernel("fill_u32")->Run(1, {buffer.address, 7, 17}, memory).ok());

  ASSERT_TRUE(
      Kernel("write_i32")->Run(1, {buffer.address + 8, uint64_t(-5)}, memory).ok());
  int32_t written;
  std::memcpy(&written, bytes + 8, 4);
  EXPECT_EQ(written, -5);

  EXPECT_EQ(Kernel("spin_add_one_u32")->BusyMicros({buffer.address, 250}), 250u);
  EXPECT_TRUE(IsTrap(Kernel("trap")->Run(1, {}, memory)));
  EXPECT_FALSE(Kernel("add_one_u32")->Run(17, {buffer.address}, memory).ok());
  EXPECT_EQ(BuiltinKernels().count("no_such_kernel"), 0u);
  EXPECT_EQ(Kernel("double_u32")->arg_count(), 1u);
  EXPECT_EQ(Kernel("axpy_f32")->arg_count(), 5u);
  EXPECT_EQ(Kernel("fill_u32")->arg_count(), 3u);
  EXPECT_EQ(Kernel("trap")->arg_count(), 0u);
}

// A launch runs a piece at a time (Kernel::Elements): every kernel run in
// parts, in order, leaves the bytes its whole run leaves.
TEST(SimDeviceTest, EveryKernelRunInPartsDoesWhatItDoesWhole) {
  constexpr uint64_t kBytes = 3 * 4 * 4096;  // three vectors of 2 add_f16_2048 blocks
  SimDevice device(0, 1 << 20);
  DeviceBuffer whole = *device.Allocate(kBytes);
  DeviceBuffer parts = *device.Allocate(kBytes);
  for (const DeviceBuffer& buffer : {whole, parts}) {
    uint8_t* bytes = SimBytes(DeviceSpan{buffer, 0});
    for (uint64_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 251);
  }
  struct Launch {
    std::string kernel;
    uint32_t block_dim;
    std::vector<uint64_t> args;  // offsets into the buffer first (as many as `pointers`)
    int pointers;
  };
  const uint32_t alpha = 0x3fc00000;  // 1.5f
  for (const Launch& launch :
       {Launch{"add_one_u32", 1000, {0}, 1}, Launch{"spin_add_one_u32", 999, {4, 0}, 1},
        Launch{"double_u32", 777, {8}, 1}, Launch{"fill_u32", 1, {12, 0xabcdef, 3001}, 1},
        Launch{"axpy_f32", 5, {0, 16384, 32768, alpha, 4000}, 3},
        Launch{"add_f16_2048", 2, {0, 16384, 32768}, 3}}) {
    const hal::sim::Kernel& kernel = *Kernel(launch.kernel);
    auto args_for = [&](const DeviceBuffer& buffer) {
      std::vector<uint64_t> args = launch.args;
      for (int i = 0; i < launch.pointers; ++i) args[i] += buffer.address;
      return args;
    };
    OneBuffer whole_memory(whole), parts_memory(parts);
    ASSERT_TRUE(kernel.Run(launch.block_dim, args_for(whole), whole_memory).ok()) << launch.kernel;
    const std::vector<uint64_t> args = args_for(parts);
    const uint64_t elements = kernel.Elements(launch.block_dim, args);
    ASSERT_GT(elements, 1u) << launch.kernel;
    ASSERT_GT(kernel.ElementsPerPiece(), 1u) << launch.kernel;
    const uint64_t bounds[] = {0, 1, elements / 3, elements - 1, elements};
    for (size_t i = 0; i + 1 < std::size(bounds); ++i) {
      ASSERT_TRUE(
          kernel.RunElements(launch.block_dim, args, parts_memory, bounds[i], bounds[i + 1]).ok())
          << launch.kernel << " [" << bounds[i] << ", " << bounds[i + 1] << ")";
    }
    ASSERT_EQ(std::memcmp(SimBytes(DeviceSpan{whole, 0}), SimBytes(DeviceSpan{parts, 0}), kBytes),
              0)
        << launch.kernel;
  }
}

TEST(SimDeviceTest, AxpyAddsAScaledVector) {
  SimDevice device(0, 1 << 20);
  DeviceBuffer buffer = *device.Allocate(48);
  uint8_t* bytes = SimBytes(DeviceSpan{buffer, 0});
  OneBuffer memory(buffer);
  const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float y[4] = {10.0f, 20.0f, 30.0f, 40.0f};
  std::memcpy(bytes, x, sizeof(x));
  std::memcpy(bytes + 16, y, sizeof(y));
  const float alpha = 0.5f;
  uint32_t alpha_bits;
  std::memcpy(&alpha_bits, &alpha, 4);
  const uint64_t x_at = buffer.address, y_at = buffer.address + 16, z_at = buffer.address + 32;
  ASSERT_TRUE(Kernel("axpy_f32")->Run(1, {x_at, y_at, z_at, alpha_bits, 3}, memory).ok());
  float z[4];
  std::memcpy(z, bytes + 32, sizeof(z));
  EXPECT_EQ(z[0], 6.0f);
  EXPECT_EQ(z[1], 12.0f);
  EXPECT_EQ(z[2], 18.0f);
  EXPECT_EQ(z[3], 0.0f);  // past the count: untouched
  // In place (dst = x), and a vector reaching past the buffer is refused.
  ASSERT_TRUE(Kernel("axpy_f32")->Run(1, {x_at, y_at, x_at, alpha_bits, 1}, memory).ok());
  float first;
  std::memcpy(&first, bytes, 4);
  EXPECT_EQ(first, 6.0f);
  EXPECT_FALSE(Kernel("axpy_f32")->Run(1, {x_at, y_at, z_at, alpha_bits, 5}, memory).ok());
  EXPECT_FALSE(
      Kernel("axpy_f32")->Ranges(1, {x_at, y_at, ~uint64_t{0} - 3, alpha_bits, 4}).ok());
}

TEST(SimDeviceTest, ClockMovesForward) {
  SimDevice device(0, 1);
  const int64_t first = device.NowNanos();
  EXPECT_GE(device.NowNanos(), first);
}

// A record an abort drops after a wait for it was queued: a wait told not to
// pass a dropped record fails, another passes.
TEST(SimDeviceTest, AWaitToldNotToPassADroppedRecordFailsWhenAnAbortDropsIt) {
  SimDevice device(0, 1 << 20);
  testing::StreamReports holder_reports, failing_reports, passing_reports;
  std::unique_ptr<Stream> holder = *device.CreateStream(holder_reports.Options());
  std::unique_ptr<Stream> failing = *device.CreateStream(failing_reports.Options());
  std::unique_ptr<Stream> passing = *device.CreateStream(passing_reports.Options());
  std::shared_ptr<Event> event = *device.CreateEvent();
  ASSERT_TRUE(holder->HostCallbackPoint().ok());
  ASSERT_TRUE(holder->RecordEvent(*event, 1).ok());
  ASSERT_TRUE(holder_reports.WaitForReached(1));
  ASSERT_TRUE(failing->WaitEvent(*event, 1, /*fail_if_dropped=*/true).ok());
  ASSERT_TRUE(passing->WaitEvent(*event, 1, /*fail_if_dropped=*/false).ok());
  EXPECT_FALSE(failing_reports.WaitForCompleted(1, absl::Milliseconds(50)));
  holder->Abort();
  ASSERT_TRUE(failing_reports.WaitForCompleted(1));
  ASSERT_TRUE(passing_reports.WaitForCompleted(1));
  EXPECT_EQ(acld::AclCodeOf(failing_reports.completed()[0].second), ACL_ERROR_RT_IPC_ERROR);
  EXPECT_TRUE(passing_reports.completed()[0].second.ok());
  EXPECT_TRUE(event->Dropped(1));
}

// A wait its stream drops (an abort) or stops is forgotten by its event at
// once: its record may never settle (here it is held behind a callback point
// that is never resumed), and a client aborting such waits in a loop must
// not pile them up in the event.
TEST(SimDeviceTest, AnAbortedOrStoppedWaitLeavesNothingInItsEvent) {
  SimDevice device(0, 1 << 20);
  testing::StreamReports holder_reports, waiter_reports;
  std::unique_ptr<Stream> holder = *device.CreateStream(holder_reports.Options());
  std::unique_ptr<Stream> waiter = *device.CreateStream(waiter_reports.Options());
  std::shared_ptr<Event> event = *device.CreateEvent();
  auto& sim_event = static_cast<SimEvent&>(*event);
  ASSERT_TRUE(holder->HostCallbackPoint().ok());
  ASSERT_TRUE(holder->RecordEvent(*event, 1).ok());
  ASSERT_TRUE(holder_reports.WaitForReached(1));
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<uint64_t> wait = waiter->WaitEvent(*event, 1, /*fail_if_dropped=*/false);
    ASSERT_TRUE(wait.ok());
    ASSERT_EQ(sim_event.waiting(), 1u) << "round " << i;
    if (i % 2 == 0) {
      waiter->Abort();
    } else {
      ASSERT_TRUE(waiter->StopItem(*wait, absl::CancelledError("stopped")).ok());
    }
    ASSERT_EQ(sim_event.waiting(), 0u) << "round " << i;
  }
  holder->Abort();
}

// A hold's end may come on a thread that serves every session (the core's
// timer, a channel thread), and a client can queue a long backlog behind the
// hold: here a held callback point, then callbacks that do not block, each
// resumed as soon as it is reached. The thread that ends the hold runs a
// slice of the backlog and leaves the rest to the device's thread, and no
// thread takes a stack frame per point (that would overflow its stack).
TEST(SimDeviceTest, AHoldsEndRunsItsBacklogASliceAtATimeWithoutNesting) {
  constexpr size_t kPoints = 100000;
  SimDevice device(0, 1 << 20);
  testing::StreamReports reports;
  StreamOptions options = reports.Options();
  Stream* stream_for_listener = nullptr;
  std::atomic<size_t> reached{0};
  options.on_callback_point = [&](uint64_t sequence) {
    // The first point holds; every later one is resumed at once.
    if (reached.fetch_add(1) > 0) stream_for_listener->ResumeCallbackPoint(sequence, {});
  };
  std::unique_ptr<Stream> stream = *device.CreateStream(options);
  stream_for_listener = stream.get();
  absl::StatusOr<uint64_t> held = stream->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  for (size_t i = 0; i < kPoints; ++i) ASSERT_TRUE(stream->HostCallbackPoint().ok());
  ASSERT_EQ(reached.load(), 1u);
  stream->ResumeCallbackPoint(*held, absl::OkStatus());
  EXPECT_LT(reports.completed().size(), kPoints) << "the thread that ended the hold ran it all";
  ASSERT_TRUE(reports.WaitForCompleted(kPoints + 1, absl::Seconds(60)));
  EXPECT_EQ(reached.load(), kPoints + 1);
  for (const auto& [sequence, status] : reports.completed()) ASSERT_TRUE(status.ok());
}

// A thread that serves every session and ends a hold (the core's timer
// timing a callback out) runs no data-moving work at all and only a few
// other items: a tenant whose thousands of streams time out together would
// hold it for a slice each.
TEST(SimDeviceTest, AThreadEndingAHoldRunsNoCopyAndOnlyAFewItems) {
  SimDevice device(0, 1 << 20);
  DeviceBuffer buffer = *device.Allocate(4096);
  const std::thread::id here = std::this_thread::get_id();
  absl::Mutex mu;
  size_t completed = 0, completed_here = 0;
  std::atomic<size_t> reached{0};
  StreamOptions options;
  options.on_complete = [&](uint64_t, const absl::Status&) {
    absl::MutexLock lock(&mu);
    ++completed;
    if (std::this_thread::get_id() == here) ++completed_here;
  };
  options.on_callback_point = [&](uint64_t) { reached.fetch_add(1); };
  std::unique_ptr<Stream> stream = *device.CreateStream(options);
  std::shared_ptr<Event> event = *device.CreateEvent();
  auto wait_for = [&](size_t count) {
    absl::MutexLock lock(&mu);
    auto enough = [&]() { return completed >= count; };
    return mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(60));
  };
  auto completed_on_this_thread = [&] {
    absl::MutexLock lock(&mu);
    return completed_here;
  };

  absl::StatusOr<uint64_t> held = stream->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 1, 4096).ok());
  ASSERT_EQ(reached.load(), 1u);
  stream->ResumeCallbackPoint(*held, absl::OkStatus());
  ASSERT_TRUE(wait_for(2));
  EXPECT_EQ(completed_on_this_thread(), 1u) << "the thread that ended the hold ran the fill";

  held = stream->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(stream->RecordEvent(*event, i + 1).ok());
  // The device's thread may still be pumping after the fill, and reach it.
  for (int i = 0; i < 6000 && reached.load() < 2; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(reached.load(), 2u);
  stream->ResumeCallbackPoint(*held, absl::OkStatus());
  ASSERT_TRUE(wait_for(2 + 1 + 1000));
  EXPECT_LE(completed_on_this_thread(), 2u + 16) << "it ran more than a few records";
  stream.reset();
  device.Free(buffer);
}

// A thread that submits behind a backlog (a channel thread, a device's
// engine worker: both serve every tenant) runs none of it, however many
// submits it makes: a request of thousands of operations, each to a stream
// whose backlog nobody was pumping, held such a thread for a piece each.
TEST(SimDeviceTest, AThreadSubmittingBehindABacklogRunsNoneOfIt) {
  SimDevice device(0, uint64_t{128} << 20);
  DeviceBuffer buffer = *device.Allocate(uint64_t{64} << 20);
  const std::thread::id here = std::this_thread::get_id();
  absl::Mutex mu;
  size_t completed = 0, completed_here = 0;
  StreamOptions options;
  options.on_complete = [&](uint64_t, const absl::Status&) {
    absl::MutexLock lock(&mu);
    ++completed;
    if (std::this_thread::get_id() == here) ++completed_here;
  };
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 8; ++i) streams.push_back(*device.CreateStream(options));
  // Each stream's first fill is many pieces: this thread runs a slice of it
  // and leaves the rest to the device's thread, and everything behind it
  // waits there too.
  constexpr int kFills = 40;
  for (int i = 0; i < kFills; ++i) {
    ASSERT_TRUE(streams[i % streams.size()]
                    ->Fill(DeviceSpan{buffer, 0}, static_cast<uint8_t>(i), uint64_t{64} << 20)
                    .ok());
  }
  {
    absl::MutexLock lock(&mu);
    auto all = [&]() { return completed == static_cast<size_t>(kFills); };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(120)));
    EXPECT_EQ(completed_here, 0u) << "the submitting thread ran fills of the backlog";
  }
  streams.clear();
  device.Free(buffer);
}

// A copy or fill of many megabytes is sliced like a backlog: the thread that
// submits it, or that ends the hold before it (a channel thread delivering a
// callback's answer), runs a slice of it and leaves the rest to the device's
// thread; its bytes are all there when it completes.
TEST(SimDeviceTest, ALargeCopyOrFillRunsAPieceAtATimeOffTheThreadThatStartedIt) {
  constexpr uint64_t kBytes = uint64_t{96} << 20;
  SimDevice device(0, uint64_t{256} << 20);
  testing::StreamReports reports;
  StreamOptions options = reports.Options();
  absl::Notification point_reached;
  options.on_callback_point = [&](uint64_t) { point_reached.Notify(); };
  std::unique_ptr<Stream> stream = *device.CreateStream(options);
  DeviceBuffer filled = *device.Allocate(kBytes);
  DeviceBuffer copied = *device.Allocate(kBytes);

  ASSERT_TRUE(stream->Fill(DeviceSpan{filled, 0}, 0x5a, kBytes).ok());
  EXPECT_EQ(reports.completed().size(), 0u) << "the submitting thread ran the whole fill";
  ASSERT_TRUE(reports.WaitForCompleted(1, absl::Seconds(60)));

  absl::StatusOr<uint64_t> held = stream->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  Transfer copy;
  copy.device_src = DeviceSpan{filled, 0};
  copy.device_dst = DeviceSpan{copied, 0};
  copy.count = kBytes;
  ASSERT_TRUE(stream->Copy(copy).ok());
  // Only a point the stream reached can be resumed.
  ASSERT_TRUE(point_reached.WaitForNotificationWithTimeout(absl::Seconds(60)));
  stream->ResumeCallbackPoint(*held, absl::OkStatus());
  EXPECT_LT(reports.completed().size(), 3u) << "the thread that ended the hold ran the whole copy";
  ASSERT_TRUE(reports.WaitForCompleted(3, absl::Seconds(60)));
  for (const auto& [sequence, status] : reports.completed()) ASSERT_TRUE(status.ok());
  for (const DeviceBuffer& buffer : {filled, copied}) {
    for (uint64_t offset : {uint64_t{0}, kBytes / 2 + 3, kBytes - 1}) {
      EXPECT_EQ(SimBytes(DeviceSpan{buffer, offset})[0], 0x5a) << offset;
    }
  }
  stream.reset();
  device.Free(filled);
  device.Free(copied);
}

// Resolves device addresses inside one buffer, for launches on a stream.
class WholeBuffer : public hal::MemoryResolver {
 public:
  explicit WholeBuffer(const DeviceBuffer& buffer) : buffer_(buffer) {}
  absl::StatusOr<DeviceSpan> Resolve(uint64_t address, uint64_t bytes) override {
    if (address < buffer_.address || address - buffer_.address > buffer_.size ||
        bytes > buffer_.size - (address - buffer_.address)) {
      return absl::OutOfRangeError("outside");
    }
    return DeviceSpan{buffer_, address - buffer_.address};
  }

 private:
  DeviceBuffer buffer_;
};

// A launch of any size runs a piece at a time: it holds neither the thread
// that submitted it nor the device's thread for long, another stream's items
// pass between its pieces, and an Abort waits for one piece, not for the
// rest. (Run whole, the fill below held the submitting thread, so the
// completion counts could not hold.)
TEST(SimDeviceTest, ALargeLaunchRunsAPieceAtATimeAndAnAbortStopsIt) {
  constexpr uint64_t kWords = uint64_t{48} << 20;  // 192 MiB: tens of pieces
  SimDevice device(0, uint64_t{512} << 20);
  DeviceBuffer buffer = *device.Allocate(kWords * 4);
  auto memory = std::make_shared<WholeBuffer>(buffer);
  const Function& fill = **device.builtin_kernels()->GetFunction("fill_u32");
  const Function& spin = **device.builtin_kernels()->GetFunction("spin_add_one_u32");
  auto fill_with = [&](uint32_t value) {
    const uint64_t fields[3] = {buffer.address, value, kWords};
    return LaunchParams{1, std::string(reinterpret_cast<const char*>(fields), sizeof(fields)),
                        memory};
  };
  uint32_t* words = reinterpret_cast<uint32_t*>(SimBytes(DeviceSpan{buffer, 0}));

  testing::StreamReports filler_reports, other_reports;
  std::unique_ptr<Stream> filler = *device.CreateStream(filler_reports.Options());
  std::unique_ptr<Stream> other = *device.CreateStream(other_reports.Options());
  ASSERT_TRUE(filler->Launch(fill, fill_with(7)).ok());
  EXPECT_EQ(filler_reports.completed().size(), 0u) << "the submitting thread ran the whole launch";
  // Another stream's kernel, busy for a millisecond, ends while the fill goes on.
  const uint64_t spin_fields[2] = {buffer.address, 1000};
  ASSERT_TRUE(other
                  ->Launch(spin, LaunchParams{1,
                                              std::string(reinterpret_cast<const char*>(spin_fields),
                                                          sizeof(spin_fields)),
                                              memory})
                  .ok());
  ASSERT_TRUE(other_reports.WaitForCompleted(1, absl::Seconds(60)));
  EXPECT_EQ(filler_reports.completed().size(), 0u)
      << "the other stream's kernel waited for the whole fill";
  ASSERT_TRUE(filler_reports.WaitForCompleted(1, absl::Seconds(60)));
  ASSERT_TRUE(filler_reports.completed()[0].second.ok());
  EXPECT_EQ(words[kWords - 1], 7u);

  // Aborted just after it started: its last words are never written.
  ASSERT_TRUE(filler->Launch(fill, fill_with(9)).ok());
  filler->Abort();
  EXPECT_EQ(words[kWords - 1], 7u) << "the aborted fill ran to its end";
  EXPECT_EQ(filler_reports.completed().size(), 1u) << "an aborted launch was reported";
  filler.reset();
  other.reset();
  device.Free(buffer);
}

// A launch aborted part-way wrote what its pieces ran: a value wait on those
// bytes (another stream's) is woken by them all the same.
TEST(SimDeviceTest, WhatAnAbortedLaunchWroteStillWakesAValueWait) {
  constexpr uint64_t kWords = uint64_t{16} << 20;  // 64 MiB: many pieces
  SimDevice device(0, uint64_t{128} << 20);
  DeviceBuffer buffer = *device.Allocate(kWords * 4);
  std::memset(SimBytes(DeviceSpan{buffer, 0}), 0, 8);
  testing::StreamReports waiter_reports, filler_reports;
  std::unique_ptr<Stream> waiter = *device.CreateStream(waiter_reports.Options());
  std::unique_ptr<Stream> filler = *device.CreateStream(filler_reports.Options());
  // Waits for the first word (and its neighbour) to be 7, as the fill makes them.
  ASSERT_TRUE(
      waiter->WaitValue(DeviceSpan{buffer, 0}, 0x0000000700000007, ACL_STREAM_WAIT_VALUE_EQ).ok());
  const uint64_t fields[3] = {buffer.address, 7, kWords};
  ASSERT_TRUE(filler
                  ->Launch(*device.builtin_kernels()->GetFunction("fill_u32").value(),
                           LaunchParams{1,
                                        std::string(reinterpret_cast<const char*>(fields),
                                                    sizeof(fields)),
                                        std::make_shared<WholeBuffer>(buffer)})
                  .ok());
  // The launching thread ran its first piece (its first words) already.
  filler->Abort();
  ASSERT_TRUE(waiter_reports.WaitForCompleted(1, absl::Seconds(30)))
      << "the wait was never told of the aborted launch's writes";
  EXPECT_TRUE(waiter_reports.completed()[0].second.ok());
  EXPECT_EQ(filler_reports.completed().size(), 0u);
  waiter.reset();
  filler.reset();
  device.Free(buffer);
}

// A reduction of many pieces leaves what one run of the whole leaves.
TEST(SimDeviceTest, AReductionInPiecesReducesWhatItReducesWhole) {
  constexpr uint64_t kBytes = (uint64_t{3} << 20) + 6;  // three pieces and some int16s
  SimDevice device(0, uint64_t{64} << 20);
  DeviceBuffer dst = *device.Allocate(kBytes);
  DeviceBuffer src = *device.Allocate(kBytes);
  std::vector<uint8_t> expected(kBytes);
  uint8_t* dst_bytes = SimBytes(DeviceSpan{dst, 0});
  uint8_t* src_bytes = SimBytes(DeviceSpan{src, 0});
  for (uint64_t i = 0; i < kBytes; ++i) {
    dst_bytes[i] = expected[i] = static_cast<uint8_t>(i * 13 + i / 4093);
    src_bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  }
  ReduceBytes(expected.data(), src_bytes, kBytes, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT16);
  testing::StreamReports reports;
  std::unique_ptr<Stream> stream = *device.CreateStream(reports.Options());
  ASSERT_TRUE(stream
                  ->Reduce(Reduction{DeviceSpan{dst, 0}, DeviceSpan{src, 0}, kBytes,
                                     ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT16})
                  .ok());
  ASSERT_TRUE(reports.WaitForCompleted(1, absl::Seconds(60)));
  ASSERT_TRUE(reports.completed()[0].second.ok());
  EXPECT_EQ(std::memcmp(dst_bytes, expected.data(), kBytes), 0);
  stream.reset();
  device.Free(dst);
  device.Free(src);
}

// A kernel behind a callback point is not run by the thread that passed the
// callback's answer on (a thread that serves every session: a kernel's work
// has no piece to stop at), but by the device's.
TEST(SimDeviceTest, AKernelBehindACallbackRunsOnTheDevicesThread) {
  SimDevice device(0, 1 << 20);
  absl::Mutex mu;
  std::vector<std::thread::id> completed_on;
  StreamOptions options;
  options.on_complete = [&](uint64_t, const absl::Status&) {
    absl::MutexLock lock(&mu);
    completed_on.push_back(std::this_thread::get_id());
  };
  absl::Notification point_reached;
  options.on_callback_point = [&](uint64_t) { point_reached.Notify(); };
  std::unique_ptr<Stream> stream = *device.CreateStream(options);
  absl::StatusOr<uint64_t> held = stream->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  absl::StatusOr<const Function*> trap = device.builtin_kernels()->GetFunction("trap");
  ASSERT_TRUE(trap.ok()) << trap.status();
  // It touches no memory: a resolver that finds none.
  class NoMemory : public hal::MemoryResolver {
   public:
    absl::StatusOr<hal::DeviceSpan> Resolve(uint64_t, uint64_t) override {
      return absl::InvalidArgumentError("no memory");
    }
  };
  ASSERT_TRUE(stream->Launch(**trap, LaunchParams{1, "", std::make_shared<NoMemory>()}).ok());
  ASSERT_TRUE(point_reached.WaitForNotificationWithTimeout(absl::Seconds(60)));
  stream->ResumeCallbackPoint(*held, absl::OkStatus());
  absl::MutexLock lock(&mu);
  auto both = [&completed_on]() { return completed_on.size() >= 2; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&both), absl::Seconds(60)));
  EXPECT_EQ(completed_on[0], std::this_thread::get_id());  // the point passed here
  EXPECT_NE(completed_on[1], std::this_thread::get_id()) << "the kernel ran on this thread";
}

// As on a device, a value wait notices a write after it landed: the writing
// stream reports the write complete before the waiting stream goes on (a
// thread synchronizing with the writer returns first).
TEST(SimDeviceTest, AValueWaitPassesOnlyAfterTheWritesCompletionIsReported) {
  SimDevice device(0, 1 << 20);
  absl::Mutex mu;
  std::vector<std::string> order;
  testing::StreamReports waiter_reports, writer_reports;
  auto recording = [&](testing::StreamReports& reports, std::string name) {
    StreamOptions options = reports.Options();
    options.on_complete = [&mu, &order, name](uint64_t, const absl::Status&) {
      absl::MutexLock lock(&mu);
      order.push_back(name);
    };
    return options;
  };
  std::unique_ptr<Stream> waiter = *device.CreateStream(recording(waiter_reports, "wait"));
  std::unique_ptr<Stream> writer = *device.CreateStream(recording(writer_reports, "write"));
  DeviceBuffer words = *device.Allocate(64);
  std::memset(SimBytes(DeviceSpan{words, 0}), 0, 8);
  ASSERT_TRUE(waiter->WaitValue(DeviceSpan{words, 0}, 5, ACL_STREAM_WAIT_VALUE_EQ).ok());
  const uint64_t five = 5;
  Transfer write;
  write.device_dst = DeviceSpan{words, 0};
  write.host_src = &five;
  write.count = sizeof(five);
  ASSERT_TRUE(writer->Copy(write).ok());
  {
    absl::MutexLock lock(&mu);
    auto both = [&order]() { return order.size() >= 2; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&both), absl::Seconds(10)));
    EXPECT_EQ(order, (std::vector<std::string>{"write", "wait"}));
  }
  waiter.reset();
  writer.reset();
  device.Free(words);
}

// Stop-on-failure turned off while the stream is stopped for a failure (the
// core may hear of it only afterwards, under CONTINUE, and abort nothing):
// the stream goes on, as it would have had the failure come a moment later.
TEST(SimDeviceTest, TurningStopOnFailureOffLetsAStoppedStreamGoOn) {
  SimDevice device(0, 1 << 20);
  absl::StatusOr<DeviceBuffer> buffer = device.Allocate(64);
  ASSERT_TRUE(buffer.ok());
  testing::StreamReports reports;
  std::unique_ptr<Stream> stream = *device.CreateStream(reports.Options());
  ASSERT_TRUE(stream->SetStopOnFailure(true).ok());
  const Function* trap = *device.builtin_kernels()->GetFunction("trap");
  ASSERT_TRUE(stream->Launch(*trap, LaunchParams{1, "", std::make_shared<WholeBuffer>(*buffer)}).ok());
  absl::StatusOr<uint64_t> fill = stream->Fill(DeviceSpan{*buffer, 0}, 0x55, 64);
  ASSERT_TRUE(fill.ok());
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_FALSE(reports.completed()[0].second.ok());
  EXPECT_FALSE(reports.WaitForCompleted(2, absl::Milliseconds(50))) << "the stream did not stop";
  ASSERT_TRUE(stream->SetStopOnFailure(false).ok());
  ASSERT_TRUE(reports.WaitForCompleted(2)) << "the stream stayed stopped";
  EXPECT_EQ(reports.completed()[1].first, *fill);
  EXPECT_TRUE(reports.completed()[1].second.ok()) << reports.completed()[1].second;
  EXPECT_EQ(SimBytes(DeviceSpan{*buffer, 0})[63], 0x55);
  stream.reset();
  device.Free(*buffer);
}

// Two streams that release each other's event waits in turn keep a release
// due on the device's thread all the time; another stream's busy kernel
// still ends when its time is up, not after their whole exchange.
TEST(SimDeviceTest, StreamsReleasingEachOtherDoNotHoldBackABusyKernelsEnd) {
  constexpr int kRounds = 20000;
  SimDevice device(0, 1 << 20);
  DeviceBuffer buffer = *device.Allocate(4096);
  auto memory = std::make_shared<WholeBuffer>(buffer);
  testing::StreamReports a_reports, b_reports, busy_reports;
  std::unique_ptr<Stream> a = *device.CreateStream(a_reports.Options());
  std::unique_ptr<Stream> b = *device.CreateStream(b_reports.Options());
  std::unique_ptr<Stream> busy = *device.CreateStream(busy_reports.Options());
  std::shared_ptr<Event> a_done = *device.CreateEvent();
  std::shared_ptr<Event> b_done = *device.CreateEvent();
  absl::StatusOr<uint64_t> held = a->HostCallbackPoint();
  ASSERT_TRUE(held.ok());
  for (int i = 1; i <= kRounds; ++i) {
    ASSERT_TRUE(a->RecordEvent(*a_done, i).ok());
    ASSERT_TRUE(a->WaitEvent(*b_done, i, /*fail_if_dropped=*/false).ok());
    ASSERT_TRUE(b->WaitEvent(*a_done, i, /*fail_if_dropped=*/false).ok());
    ASSERT_TRUE(b->RecordEvent(*b_done, i).ok());
  }
  ASSERT_TRUE(a_reports.WaitForReached(1));
  const Function& spin = **device.builtin_kernels()->GetFunction("spin_add_one_u32");
  const uint64_t spin_fields[2] = {buffer.address, 1000};
  const std::string spin_args(reinterpret_cast<const char*>(spin_fields), sizeof(spin_fields));
  ASSERT_TRUE(busy->Launch(spin, LaunchParams{1, spin_args, memory}).ok());
  a->ResumeCallbackPoint(*held, absl::OkStatus());
  ASSERT_TRUE(busy_reports.WaitForCompleted(1, absl::Seconds(60)));
  // Its end is due a millisecond in, a few hundred rounds (before, it came
  // after thousands, whenever the exchange paused).
  EXPECT_LT(b_reports.completed().size(), size_t{4000})
      << "the busy kernel's end waited behind the exchange";
  ASSERT_TRUE(a_reports.WaitForCompleted(1 + 2 * kRounds, absl::Seconds(120)));
  ASSERT_TRUE(b_reports.WaitForCompleted(2 * kRounds, absl::Seconds(120)));
  a.reset();
  b.reset();
  busy.reset();
  device.Free(buffer);
}

// The device's thread is shared between the streams' owners, not streams:
// an owner with a hundred streams each with a long fill left to that thread
// holds another owner's fill back by a slice or two, not by a hundred.
TEST(SimDeviceTest, TheDevicesThreadTakesTurnsBetweenOwnersNotStreams) {
  constexpr int kStreams = 100;
  constexpr uint64_t kBytes = uint64_t{16} << 20;
  SimDevice device(0, uint64_t{64} << 20);
  DeviceBuffer buffer = *device.Allocate(kBytes);
  absl::Mutex mu;
  int flooding_done = 0;  // fills: the points complete first
  std::optional<int> flooding_done_before_other;
  std::vector<std::unique_ptr<Stream>> flooding;
  uint64_t fill_sequence = 0;  // each stream's second item (below)
  for (int i = 0; i < kStreams; ++i) {
    StreamOptions options;
    options.owner = "flooding";
    options.on_complete = [&](uint64_t sequence, const absl::Status&) {
      absl::MutexLock lock(&mu);
      flooding_done += sequence == fill_sequence ? 1 : 0;
    };
    flooding.push_back(*device.CreateStream(std::move(options)));
  }
  StreamOptions other_options;
  other_options.owner = "other";
  other_options.on_complete = [&](uint64_t sequence, const absl::Status&) {
    absl::MutexLock lock(&mu);
    if (sequence == fill_sequence) flooding_done_before_other = flooding_done;
  };
  std::unique_ptr<Stream> other = *device.CreateStream(std::move(other_options));
  // Each fill waits behind a held point, and ending the holds leaves the
  // fills to the device's thread: all of them are there before it starts.
  std::vector<uint64_t> points;
  for (auto& stream : flooding) {
    points.push_back(*stream->HostCallbackPoint());
    absl::StatusOr<uint64_t> fill = stream->Fill(DeviceSpan{buffer, 0}, 1, kBytes);
    ASSERT_TRUE(fill.ok());
    absl::MutexLock lock(&mu);
    fill_sequence = *fill;
  }
  const uint64_t other_point = *other->HostCallbackPoint();
  ASSERT_EQ(*other->Fill(DeviceSpan{buffer, 0}, 2, kBytes), fill_sequence);
  for (int i = 0; i < kStreams; ++i) flooding[i]->ResumeCallbackPoint(points[i], absl::OkStatus());
  other->ResumeCallbackPoint(other_point, absl::OkStatus());
  absl::MutexLock lock(&mu);
  auto all_done = [&] { return flooding_done == kStreams && flooding_done_before_other; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Seconds(120)));
  EXPECT_LT(*flooding_done_before_other, kStreams / 2)
      << "the other owner's fill waited for the flooding owner's streams";
  mu.Unlock();
  flooding.clear();
  other.reset();
  device.Free(buffer);
  mu.Lock();
}

// A sim device given a number of streams and events refuses the one past
// it, whoever asks, as a real device does; a stream or event that goes
// gives its place back (an event only once nothing holds it).
TEST(SimDeviceTest, ADeviceWithAFixedNumberOfStreamsAndEventsRefusesTheOnePastIt) {
  SimDevice device(0, 1 << 20, HostClock(), std::make_shared<MemoryWatch>(), {2, 3});
  EXPECT_EQ(device.info().objects.streams, 2u);
  EXPECT_EQ(device.info().objects.events, 3u);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 2; ++i) streams.push_back(*device.CreateStream({}));
  absl::StatusOr<std::unique_ptr<Stream>> refused = device.CreateStream({});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(acld::AclCodeOf(refused.status()), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  EXPECT_NE(refused.status().message().find("--sim_device_streams"), std::string::npos)
      << refused.status();
  streams.pop_back();
  EXPECT_TRUE(device.CreateStream({}).ok()) << "a destroyed stream's place comes back";

  std::vector<std::shared_ptr<Event>> events;
  for (int i = 0; i < 3; ++i) events.push_back(*device.CreateEvent());
  absl::StatusOr<std::shared_ptr<Event>> refused_event = device.CreateEvent();
  ASSERT_FALSE(refused_event.ok());
  EXPECT_EQ(acld::AclCodeOf(refused_event.status()), ACL_ERROR_RT_NO_EVENT_RESOURCE);
  std::shared_ptr<Event> still_held = events.back();
  events.pop_back();
  EXPECT_FALSE(device.CreateEvent().ok()) << "the event is still held";
  still_held.reset();
  EXPECT_TRUE(device.CreateEvent().ok());

  SimDevice unlimited(1, 1 << 20);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(unlimited.CreateStream({}).ok());
}

}  // namespace
}  // namespace hal::sim
