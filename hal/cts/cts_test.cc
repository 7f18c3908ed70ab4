// The HAL conformance suite: what every backend must do, checked through the
// HAL interface alone (memory, copies in every direction, fills, stream order
// and sequence numbers, events and timestamps, host-callback points, abort,
// failures and their codes, executables). Instantiated for each backend of
// cts_backends.cc; a backend skips only what it lists as unsupported.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "gtest/gtest.h"
#include "hal/cts/cts_backends.h"
#include "hal/device.h"
#include "hal/testing/stream_reports.h"
#include "proto/acl/acl_status.h"

namespace hal::cts {
namespace {

using hal::testing::StreamReports;

// Resolves addresses inside the buffers it was given (the core's role).
class BufferResolver : public MemoryResolver {
 public:
  explicit BufferResolver(std::vector<DeviceBuffer> buffers) : buffers_(std::move(buffers)) {}
  absl::StatusOr<DeviceSpan> Resolve(uint64_t address, uint64_t bytes) override {
    for (const DeviceBuffer& buffer : buffers_) {
      if (address >= buffer.address && bytes <= buffer.size &&
          address - buffer.address <= buffer.size - bytes) {
        return DeviceSpan{buffer, address - buffer.address};
      }
    }
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "outside the test's buffers");
  }

 private:
  std::vector<DeviceBuffer> buffers_;
};

class HalConformanceTest : public ::testing::TestWithParam<CtsBackend> {
 protected:
  void SetUp() override {
    // One backend per process and name: a vendor runtime initializes once.
    static auto* backends = new std::map<std::string, std::unique_ptr<Backend>>;
    std::unique_ptr<Backend>& backend = (*backends)[GetParam().name];
    if (backend == nullptr) {
      absl::StatusOr<std::unique_ptr<Backend>> created = GetParam().create();
      ASSERT_TRUE(created.ok()) << created.status();
      backend = *std::move(created);
    }
    ASSERT_GT(backend->device_count(), 0);
    device_ = &backend->device(0);
    if (!device_->is_up()) {
      ASSERT_TRUE(device_->BringUp().ok());
    }
  }

  bool Supports(Feature feature) const { return GetParam().unsupported.count(feature) == 0; }

  DeviceBuffer Allocate(uint64_t size) {
    absl::StatusOr<DeviceBuffer> buffer = device_->Allocate(size);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return buffer.ok() ? *buffer : DeviceBuffer{};
  }

  std::vector<uint8_t> Read(const DeviceBuffer& buffer, uint64_t count) {
    std::vector<uint8_t> bytes(count, 0xee);
    Transfer read;
    read.device_src = DeviceSpan{buffer, 0};
    read.host_dst = bytes.data();
    read.count = count;
    EXPECT_TRUE(device_->Copy(read).ok());
    return bytes;
  }

  void Write(const DeviceBuffer& buffer, const std::vector<uint8_t>& bytes) {
    Transfer write;
    write.device_dst = DeviceSpan{buffer, 0};
    write.host_src = bytes.data();
    write.count = bytes.size();
    ASSERT_TRUE(device_->Copy(write).ok());
  }

  std::unique_ptr<Stream> NewStream(StreamReports& reports) {
    absl::StatusOr<std::unique_ptr<Stream>> stream = device_->CreateStream(reports.Options());
    EXPECT_TRUE(stream.ok()) << stream.status();
    return stream.ok() ? *std::move(stream) : nullptr;
  }

  Device* device_ = nullptr;
};

TEST_P(HalConformanceTest, FreshMemoryIsZeroedAndInsideTheAddressWindow) {
  for (int round = 0; round < 3; ++round) {
    DeviceBuffer buffer = Allocate(64 << 10);
    EXPECT_TRUE(device_->info().addresses.Contains(buffer.address));
    EXPECT_EQ(Read(buffer, buffer.size), std::vector<uint8_t>(buffer.size, 0)) << "round " << round;
    Write(buffer, std::vector<uint8_t>(buffer.size, 0xab));  // the next owner must not see this
    device_->Free(buffer);
  }
}

TEST_P(HalConformanceTest, ReservedBytesAreWhatAnAllocationHolds) {
  EXPECT_FALSE(device_->ReservedBytes(UINT64_MAX).has_value());
  EXPECT_FALSE(device_->ReservedBytes(UINT64_MAX - 3).has_value());
  const std::optional<uint64_t> reserved = device_->ReservedBytes(1000);
  ASSERT_TRUE(reserved.has_value());
  EXPECT_GE(*reserved, 1000u);
  const uint64_t before = device_->used_bytes();
  DeviceBuffer buffer = Allocate(1000);
  EXPECT_EQ(buffer.size, 1000u);
  EXPECT_EQ(buffer.reserved, *reserved);
  EXPECT_EQ(device_->used_bytes(), before + *reserved);
  device_->Free(buffer);
  EXPECT_EQ(device_->used_bytes(), before);
}

TEST_P(HalConformanceTest, AddressReservationsShareNoAddressWithAllocations) {
  const uint64_t granularity = device_->features().address_granularity;
  if (granularity == 0) {
    EXPECT_EQ(acld::AclCodeOf(device_->ReserveAddresses(2 << 20, 2 << 20).status()),
              ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    return;
  }
  DeviceBuffer before = Allocate(4096);
  absl::StatusOr<uint64_t> reserved = device_->ReserveAddresses(2 * granularity, granularity);
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  DeviceBuffer after = Allocate(4096);
  EXPECT_EQ(*reserved % granularity, 0u);
  EXPECT_TRUE(device_->info().addresses.Contains(*reserved));
  EXPECT_TRUE(device_->info().addresses.Contains(*reserved + 2 * granularity - 1));
  for (const DeviceBuffer& buffer : {before, after}) {
    const bool apart = buffer.address + buffer.reserved <= *reserved ||
                       *reserved + 2 * granularity <= buffer.address;
    EXPECT_TRUE(apart) << "an allocation inside a reservation";
  }
  absl::StatusOr<uint64_t> other = device_->ReserveAddresses(granularity, granularity);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(*other + granularity <= *reserved || *reserved + 2 * granularity <= *other);
  device_->ReleaseAddresses(*reserved, 2 * granularity);
  device_->ReleaseAddresses(*other, granularity);
  device_->Free(before);
  device_->Free(after);
}

TEST_P(HalConformanceTest, CopiesInEveryDirectionOnAStreamReportInOrder) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  DeviceBuffer a = Allocate(4096), b = Allocate(4096);
  std::vector<uint8_t> source(4096), back(4096, 0);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7);
  Transfer h2d;
  h2d.device_dst = DeviceSpan{a, 0};
  h2d.host_src = source.data();
  h2d.count = source.size();
  Transfer d2d;
  d2d.device_dst = DeviceSpan{b, 0};
  d2d.device_src = DeviceSpan{a, 0};
  d2d.count = source.size();
  Transfer d2h;
  d2h.device_src = DeviceSpan{b, 0};
  d2h.host_dst = back.data();
  d2h.count = back.size();
  EXPECT_EQ(*stream->Copy(h2d), 1u);
  EXPECT_EQ(*stream->Copy(d2d), 2u);
  EXPECT_EQ(*stream->Copy(d2h), 3u);
  ASSERT_TRUE(reports.WaitForCompleted(3));
  const auto completed = reports.completed();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(completed[i].first, i + 1);
    EXPECT_TRUE(completed[i].second.ok()) << completed[i].second;
  }
  EXPECT_EQ(back, source);
  stream.reset();
  device_->Free(a);
  device_->Free(b);
}

TEST_P(HalConformanceTest, FillsOnAStreamAndSynchronously) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer buffer = Allocate(1024);
  ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 0x5a, 512).ok());
  ASSERT_TRUE(reports.WaitForCompleted(1));
  std::vector<uint8_t> want(1024, 0);
  std::fill(want.begin(), want.begin() + 512, 0x5a);
  EXPECT_EQ(Read(buffer, 1024), want);
  ASSERT_TRUE(device_->Fill(DeviceSpan{buffer, 512}, 0x11, 512).ok());
  std::fill(want.begin() + 512, want.end(), 0x11);
  EXPECT_EQ(Read(buffer, 1024), want);
  stream.reset();
  device_->Free(buffer);
}

template <typename T>
std::vector<uint8_t> BytesOf(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST_P(HalConformanceTest, ReductionsCombineElementsInStreamOrder) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer dst = Allocate(16), src = Allocate(16);
  Write(dst, BytesOf<int32_t>({1, -2, INT32_MAX, 40}));
  Write(src, BytesOf<int32_t>({10, 20, 1, -40}));
  ASSERT_TRUE(stream->Reduce({DeviceSpan{dst, 0}, DeviceSpan{src, 0}, 16,
                              ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT32})
                  .ok());
  ASSERT_TRUE(stream->Reduce({DeviceSpan{dst, 0}, DeviceSpan{src, 0}, 8,
                              ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX, ACL_INT32})
                  .ok());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  for (const auto& [sequence, status] : reports.completed()) EXPECT_TRUE(status.ok()) << status;
  // SUM, then MAX over the first two elements only.
  EXPECT_EQ(Read(dst, 16), BytesOf<int32_t>({11, 20, INT32_MIN, 0}));

  Write(dst, BytesOf<float>({1.5f, -3.0f}));
  Write(src, BytesOf<float>({2.0f, -4.0f}));
  ASSERT_TRUE(stream->Reduce({DeviceSpan{dst, 0}, DeviceSpan{src, 0}, 8,
                              ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN, ACL_FLOAT})
                  .ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_EQ(Read(dst, 8), BytesOf<float>({1.5f, -4.0f}));
  stream.reset();
  device_->Free(dst);
  device_->Free(src);
}

TEST_P(HalConformanceTest, AValueWaitHoldsItsStreamUntilTheValueIsWritten) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer words = Allocate(64);
  Write(words, BytesOf<uint64_t>({1, 0}));
  ASSERT_TRUE(stream->WaitValue(DeviceSpan{words, 0}, 5, ACL_STREAM_WAIT_VALUE_EQ).ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{words, 8}, 0x77, 8).ok());
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(reports.completed().empty()) << "nothing passes the wait before the value is there";
  Write(words, BytesOf<uint64_t>({5}));
  ASSERT_TRUE(reports.WaitForCompleted(2));
  for (const auto& [sequence, status] : reports.completed()) EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(Read(words, 16), BytesOf<uint64_t>({5, 0x7777777777777777}));
  stream.reset();
  device_->Free(words);
}

// aclrtStreamStop: the item executing (here a wait that would hold for ever)
// fails without its effect; the items after it are kept and run.
TEST_P(HalConformanceTest, StopEndsTheRunningItemAndKeepsTheOnesAfterIt) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer words = Allocate(64);
  Write(words, BytesOf<uint64_t>({1, 0}));
  absl::StatusOr<uint64_t> wait =
      stream->WaitValue(DeviceSpan{words, 0}, 5, ACL_STREAM_WAIT_VALUE_EQ);
  ASSERT_TRUE(wait.ok());
  absl::StatusOr<uint64_t> fill = stream->Fill(DeviceSpan{words, 8}, 0x66, 8);
  ASSERT_TRUE(fill.ok());
  absl::SleepFor(absl::Milliseconds(50));
  ASSERT_TRUE(reports.completed().empty()) << "the wait passed before its value was there";
  ASSERT_TRUE(stream->StopItem(*wait, acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped")).ok());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  EXPECT_EQ(reports.completed()[0].first, *wait);
  EXPECT_EQ(acld::AclCodeOf(reports.completed()[0].second), ACL_ERROR_RT_INTERNAL_ERROR)
      << reports.completed()[0].second;
  EXPECT_EQ(reports.completed()[1].first, *fill);
  EXPECT_TRUE(reports.completed()[1].second.ok()) << reports.completed()[1].second;
  EXPECT_EQ(Read(words, 16), BytesOf<uint64_t>({1, 0x6666666666666666}));
  // Nothing running: a stop changes nothing, and the stream goes on.
  ASSERT_TRUE(stream->StopItem(*fill, acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped")).ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{words, 8}, 0x77, 8).ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_TRUE(reports.completed()[2].second.ok()) << reports.completed()[2].second;
  EXPECT_EQ(reports.completed().size(), 3u);
  stream.reset();
  device_->Free(words);
}

// A stop names its item: one that has finished, or one still queued behind
// the item executing, stops nothing (the executing item is not the one the
// caller meant).
TEST_P(HalConformanceTest, AStopForAnotherItemLeavesTheExecutingOneAlone) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer words = Allocate(64);
  Write(words, BytesOf<uint64_t>({1, 0}));
  absl::StatusOr<uint64_t> done = stream->Fill(DeviceSpan{words, 8}, 0x55, 8);
  ASSERT_TRUE(done.ok());
  ASSERT_TRUE(reports.WaitForCompleted(1));
  absl::StatusOr<uint64_t> wait =
      stream->WaitValue(DeviceSpan{words, 0}, 5, ACL_STREAM_WAIT_VALUE_EQ);
  ASSERT_TRUE(wait.ok());
  absl::StatusOr<uint64_t> behind = stream->Fill(DeviceSpan{words, 8}, 0x66, 8);
  ASSERT_TRUE(behind.ok());
  const absl::Status why = acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped");
  ASSERT_TRUE(stream->StopItem(*done, why).ok());
  ASSERT_TRUE(stream->StopItem(*behind, why).ok());
  absl::SleepFor(absl::Milliseconds(50));
  ASSERT_EQ(reports.completed().size(), 1u) << "a stop for another item ended the wait";
  ASSERT_TRUE(stream->StopItem(*wait, why).ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_EQ(reports.completed()[1].first, *wait);
  EXPECT_EQ(acld::AclCodeOf(reports.completed()[1].second), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(reports.completed()[2].first, *behind);
  EXPECT_TRUE(reports.completed()[2].second.ok()) << reports.completed()[2].second;
  EXPECT_EQ(Read(words, 16), BytesOf<uint64_t>({1, 0x6666666666666666}));
  stream.reset();
  device_->Free(words);
}

TEST_P(HalConformanceTest, ManyItemsKeepTheirOrder) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer buffer = Allocate(256);
  constexpr int kItems = 500;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, static_cast<uint8_t>(i), 256).ok());
  }
  ASSERT_TRUE(reports.WaitForCompleted(kItems));
  const auto completed = reports.completed();
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(completed[i].first, uint64_t(i + 1));
  EXPECT_EQ(Read(buffer, 1)[0], static_cast<uint8_t>(kItems - 1));  // the last fill won
  stream.reset();
  device_->Free(buffer);
}

TEST_P(HalConformanceTest, EventsCompleteWithOrderedTimestamps) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  absl::StatusOr<std::shared_ptr<Event>> first = device_->CreateEvent();
  absl::StatusOr<std::shared_ptr<Event>> second = device_->CreateEvent();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE((*first)->TimestampNanos().has_value());
  DeviceBuffer buffer = Allocate(1 << 20);
  ASSERT_TRUE(stream->RecordEvent(**first, 1).ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 1, 1 << 20).ok());
  ASSERT_TRUE(stream->RecordEvent(**second, 1).ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_TRUE((*first)->Complete());
  EXPECT_TRUE((*second)->Complete());
  ASSERT_TRUE((*first)->TimestampNanos().has_value());
  ASSERT_TRUE((*second)->TimestampNanos().has_value());
  EXPECT_LE(*(*first)->TimestampNanos(), *(*second)->TimestampNanos());
  stream.reset();
  device_->Free(buffer);
}

TEST_P(HalConformanceTest, HostCallbackPointHoldsTheStreamUntilResumed) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer buffer = Allocate(64);
  absl::StatusOr<uint64_t> point = stream->HostCallbackPoint();
  ASSERT_TRUE(point.ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 9, 64).ok());
  ASSERT_TRUE(reports.WaitForReached(1));
  EXPECT_EQ(reports.reached()[0], *point);
  EXPECT_FALSE(reports.WaitForCompleted(2, absl::Milliseconds(100)))
      << "work behind a held callback point ran";
  stream->ResumeCallbackPoint(*point, absl::OkStatus());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  EXPECT_EQ(Read(buffer, 1)[0], 9);
  stream.reset();
  device_->Free(buffer);
}

TEST_P(HalConformanceTest, WaitEventHoldsAnotherStreamUntilTheRecordRuns) {
  StreamReports holder_reports, waiter_reports;
  std::unique_ptr<Stream> holder = NewStream(holder_reports);
  std::unique_ptr<Stream> waiter = NewStream(waiter_reports);
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(64);
  absl::StatusOr<uint64_t> point = holder->HostCallbackPoint();
  ASSERT_TRUE(holder->RecordEvent(**event, 1).ok());
  ASSERT_TRUE(holder_reports.WaitForReached(1));
  ASSERT_TRUE(waiter->WaitEvent(**event, 1, false).ok());
  ASSERT_TRUE(waiter->Fill(DeviceSpan{buffer, 0}, 3, 64).ok());
  EXPECT_FALSE(waiter_reports.WaitForCompleted(2, absl::Milliseconds(100)))
      << "a stream passed a wait for a record that had not run";
  holder->ResumeCallbackPoint(*point, absl::OkStatus());
  ASSERT_TRUE(waiter_reports.WaitForCompleted(2));
  EXPECT_EQ(Read(buffer, 1)[0], 3);
  holder.reset();
  waiter.reset();
  device_->Free(buffer);
}

// A wait is for one record: it holds for a record submitted after it, and a
// later record (even one already run) does not release it.
TEST_P(HalConformanceTest, AWaitIsForItsRecordEvenOneSubmittedLater) {
  StreamReports holder_reports, waiter_reports, other_reports;
  std::unique_ptr<Stream> holder = NewStream(holder_reports);
  std::unique_ptr<Stream> waiter = NewStream(waiter_reports);
  std::unique_ptr<Stream> other = NewStream(other_reports);
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(64);
  // The waiter waits for record 1, which no stream has yet.
  ASSERT_TRUE(waiter->WaitEvent(**event, 1, false).ok());
  ASSERT_TRUE(waiter->Fill(DeviceSpan{buffer, 0}, 5, 64).ok());
  // Record 2 runs at once elsewhere: not the one waited for.
  ASSERT_TRUE(other->RecordEvent(**event, 2).ok());
  ASSERT_TRUE(other_reports.WaitForCompleted(1));
  EXPECT_FALSE(waiter_reports.WaitForCompleted(1, absl::Milliseconds(100)))
      << "a wait passed before its record was even submitted";
  // Record 1 comes behind a held point; the wait passes once it ran.
  absl::StatusOr<uint64_t> point = holder->HostCallbackPoint();
  ASSERT_TRUE(point.ok());
  ASSERT_TRUE(holder->RecordEvent(**event, 1).ok());
  ASSERT_TRUE(holder_reports.WaitForReached(1));
  EXPECT_FALSE(waiter_reports.WaitForCompleted(1, absl::Milliseconds(100)))
      << "a wait passed before its record ran";
  EXPECT_FALSE((*event)->Complete());
  EXPECT_TRUE((*event)->Settled(2));
  EXPECT_FALSE((*event)->Settled(1));
  holder->ResumeCallbackPoint(*point, absl::OkStatus());
  ASSERT_TRUE(waiter_reports.WaitForCompleted(2));
  EXPECT_EQ(Read(buffer, 1)[0], 5);
  EXPECT_TRUE((*event)->Complete());
  EXPECT_TRUE((*event)->Settled(1));
  EXPECT_FALSE((*event)->Dropped(1));
  holder.reset();
  waiter.reset();
  other.reset();
  device_->Free(buffer);
}

// A wait for a record whose task was dropped before it reached the device
// passes once the record is forgotten, and so does one for a record an
// abort dropped.
TEST_P(HalConformanceTest, WaitsForForgottenOrDroppedRecordsPass) {
  StreamReports holder_reports, waiter_reports;
  std::unique_ptr<Stream> holder = NewStream(holder_reports);
  std::unique_ptr<Stream> waiter = NewStream(waiter_reports);
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(waiter->WaitEvent(**event, 1, false).ok());
  EXPECT_FALSE(waiter_reports.WaitForCompleted(1, absl::Milliseconds(50)));
  EXPECT_FALSE((*event)->Settled(1));
  (*event)->ForgetRecord(1);
  EXPECT_TRUE((*event)->Settled(1));
  ASSERT_TRUE(waiter_reports.WaitForCompleted(1));

  absl::StatusOr<uint64_t> point = holder->HostCallbackPoint();
  ASSERT_TRUE(point.ok());
  ASSERT_TRUE(holder->RecordEvent(**event, 2).ok());
  ASSERT_TRUE(holder_reports.WaitForReached(1));
  ASSERT_TRUE(waiter->WaitEvent(**event, 2, false).ok());
  EXPECT_FALSE(waiter_reports.WaitForCompleted(2, absl::Milliseconds(50)));
  holder->Abort();
  ASSERT_TRUE(waiter_reports.WaitForCompleted(2));
  EXPECT_TRUE((*event)->Complete());
  holder.reset();
  waiter.reset();
}

// A wait told not to pass a dropped record (another process's, whose end or
// abort dropped it) fails with ACL_ERROR_RT_IPC_ERROR: at once, or when it
// completes.
TEST_P(HalConformanceTest, AWaitThatMustNotPassADroppedRecordFails) {
  StreamReports waiter_reports;
  std::unique_ptr<Stream> waiter = NewStream(waiter_reports);
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  (*event)->ForgetRecord(1);
  EXPECT_TRUE((*event)->Dropped(1));
  absl::StatusOr<uint64_t> waited = waiter->WaitEvent(**event, 1, /*fail_if_dropped=*/true);
  if (waited.ok()) {
    ASSERT_TRUE(waiter_reports.WaitForCompleted(1));
    EXPECT_EQ(acld::AclCodeOf(waiter_reports.completed()[0].second), ACL_ERROR_RT_IPC_ERROR);
  } else {
    EXPECT_EQ(acld::AclCodeOf(waited.status()), ACL_ERROR_RT_IPC_ERROR);
  }
  waiter.reset();
}

TEST_P(HalConformanceTest, AbortDropsWhatHasNotRunAndTheStreamGoesOn) {
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  DeviceBuffer buffer = Allocate(64);
  absl::StatusOr<uint64_t> point = stream->HostCallbackPoint();
  ASSERT_TRUE(point.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 0x77, 64).ok());
  ASSERT_TRUE(reports.WaitForReached(1));
  stream->Abort();
  EXPECT_FALSE(reports.WaitForCompleted(1, absl::Milliseconds(100)))
      << "an aborted item was reported";
  EXPECT_EQ(Read(buffer, 1)[0], 0) << "an aborted fill ran";
  absl::StatusOr<uint64_t> after = stream->Fill(DeviceSpan{buffer, 0}, 0x42, 64);
  ASSERT_TRUE(after.ok());
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_EQ(reports.completed()[0].first, *after);
  EXPECT_EQ(Read(buffer, 1)[0], 0x42);
  stream.reset();
  device_->Free(buffer);
}

TEST_P(HalConformanceTest, ExecutablesLaunchAndFailWithTheDevicesCodes) {
  absl::StatusOr<std::shared_ptr<Executable>> junk = device_->LoadExecutable("not a binary");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(acld::AclCodeOf(junk.status()), ACL_ERROR_INVALID_PARAM) << junk.status();
  absl::StatusOr<std::shared_ptr<Executable>> executable =
      device_->LoadExecutable(GetParam().kernels_binary);
  ASSERT_TRUE(executable.ok()) << executable.status();
  EXPECT_FALSE((*executable)->GetFunction("missing").ok());
  absl::StatusOr<const Function*> inc = (*executable)->GetFunction("inc");
  absl::StatusOr<const Function*> boom = (*executable)->GetFunction("boom");
  ASSERT_TRUE(inc.ok() && boom.ok());

  DeviceBuffer counters = Allocate(16);
  std::string args(8, '\0');
  std::memcpy(args.data(), &counters.address, 8);
  auto memory = std::make_shared<BufferResolver>(std::vector<DeviceBuffer>{counters});
  if (Supports(Feature::kKernelRanges)) {
    EXPECT_EQ((*inc)->args_size(), std::optional<uint64_t>(8));
    absl::StatusOr<std::vector<DeviceRange>> ranges = (*inc)->Ranges(4, args);
    ASSERT_TRUE(ranges.ok());
    ASSERT_EQ(ranges->size(), 1u);
    EXPECT_EQ((*ranges)[0].address, counters.address);
    EXPECT_EQ((*ranges)[0].bytes, 16u);
  } else {
    EXPECT_TRUE(absl::IsUnimplemented((*inc)->Ranges(4, args).status()));
  }
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_TRUE(stream->Launch(**inc, LaunchParams{4, args, memory}).ok());
  ASSERT_TRUE(stream->Launch(**boom, LaunchParams{1, "", memory}).ok());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  const auto completed = reports.completed();
  EXPECT_TRUE(completed[0].second.ok()) << completed[0].second;
  EXPECT_EQ(acld::AclCodeOf(completed[1].second), ACL_ERROR_RT_AICORE_EXCEPTION)
      << completed[1].second;
  std::vector<uint8_t> values = Read(counters, 16);
  uint32_t words[4];
  std::memcpy(words, values.data(), 16);
  for (uint32_t word : words) EXPECT_EQ(word, 1u);
  stream.reset();
  device_->Free(counters);
}

TEST_P(HalConformanceTest, StopOnFailureRunsNothingAfterTheFailureUntilAbort) {
  absl::StatusOr<std::shared_ptr<Executable>> executable =
      device_->LoadExecutable(GetParam().kernels_binary);
  ASSERT_TRUE(executable.ok()) << executable.status();
  absl::StatusOr<const Function*> boom = (*executable)->GetFunction("boom");
  ASSERT_TRUE(boom.ok());
  auto memory = std::make_shared<BufferResolver>(std::vector<DeviceBuffer>{});
  DeviceBuffer buffer = Allocate(64);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_TRUE(stream->SetStopOnFailure(true).ok());
  ASSERT_TRUE(stream->Launch(**boom, LaunchParams{1, "", memory}).ok());
  ASSERT_TRUE(stream->Fill(DeviceSpan{buffer, 0}, 0x55, 64).ok());
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_EQ(acld::AclCodeOf(reports.completed()[0].second), ACL_ERROR_RT_AICORE_EXCEPTION)
      << reports.completed()[0].second;
  EXPECT_FALSE(reports.WaitForCompleted(2, absl::Milliseconds(200)))
      << "an item after the failure was reported";
  EXPECT_EQ(Read(buffer, 1)[0], 0) << "a fill after the failure ran";

  // The abort ends the stop; the stream goes on (and continues past failures
  // once stop-on-failure is off again).
  stream->Abort();
  ASSERT_TRUE(stream->SetStopOnFailure(false).ok());
  ASSERT_TRUE(stream->Launch(**boom, LaunchParams{1, "", memory}).ok());
  absl::StatusOr<uint64_t> after = stream->Fill(DeviceSpan{buffer, 0}, 0x42, 64);
  ASSERT_TRUE(after.ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_EQ(reports.completed()[2].first, *after);
  EXPECT_TRUE(reports.completed()[2].second.ok()) << reports.completed()[2].second;
  EXPECT_EQ(Read(buffer, 1)[0], 0x42);
  stream.reset();
  device_->Free(buffer);
}

TEST_P(HalConformanceTest, BuiltinKernels) {
  if (!Supports(Feature::kBuiltinKernels)) {
    EXPECT_EQ(device_->builtin_kernels(), nullptr);
    GTEST_SKIP() << GetParam().name << " has no built-in kernels";
  }
  ASSERT_NE(device_->builtin_kernels(), nullptr);
  EXPECT_TRUE(device_->builtin_kernels()->GetFunction("add_one_u32").ok());
  EXPECT_TRUE(device_->builtin_kernels()->GetFunction("trap").ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, HalConformanceTest, ::testing::ValuesIn(CtsBackends()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hal::cts
