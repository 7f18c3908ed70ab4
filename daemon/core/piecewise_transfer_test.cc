#include "daemon/core/piecewise_transfer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/core/runtime.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_backend.h"

namespace acld {
namespace {

constexpr uint64_t kPiece = PiecewiseTransfer::kPieceBytes;

class PiecewiseTransferTest : public ::testing::Test {
 protected:
  PiecewiseTransferTest() : runtime_(hal::sim::CreateSimBackend({1, 64 << 20})) {
    session_ = runtime_.OpenSession({100, 0, 0, "piecewise"});
    EXPECT_TRUE(runtime_.Initialize(session_, {}).ok());
    EXPECT_TRUE(runtime_.SetDevice(session_, 0).ok());
  }

  uint64_t Malloc(uint64_t bytes) {
    absl::StatusOr<uint64_t> address = runtime_.Malloc(session_, 0, bytes);
    EXPECT_TRUE(address.ok()) << address.status();
    return address.value_or(0);
  }

  // A copy of `bytes` in `direction`; `host` is its host side (H2D, D2H).
  static CopyRequest Request(CopyRequest::Direction direction, uint64_t device_src,
                             uint64_t device_dst, uint8_t* host, uint64_t bytes) {
    CopyRequest copy;
    copy.direction = direction;
    copy.device_src = device_src;
    copy.device_dst = device_dst;
    copy.count = bytes;
    if (host != nullptr) copy.host = HostSpan{host, nullptr, bytes};
    return copy;
  }

  std::vector<uint8_t> Read(uint64_t address, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    EXPECT_TRUE(runtime_
                    .Copy(session_, Request(CopyRequest::Direction::kDeviceToHost, address, 0,
                                            out.data(), bytes))
                    .ok());
    return out;
  }

  // Runs `transfer` one piece per call (a zero slice still runs one) and
  // returns how many calls that took.
  static int RunPieceByPiece(PiecewiseTransfer& transfer) {
    int calls = 0;
    while (!transfer.finished() && calls < 1000) {
      EXPECT_TRUE(transfer.RunFor(absl::ZeroDuration()).ok());
      ++calls;
    }
    return calls;
  }

  Runtime runtime_;
  SessionId session_ = 0;
};

TEST_F(PiecewiseTransferTest, AFillRunsAPieceAtATimeAndCoversItsWholeRangeOnly) {
  const uint64_t bytes = 3 * kPiece + 123;
  const uint64_t buffer = Malloc(bytes + 64);
  absl::StatusOr<PiecewiseTransfer> fill =
      runtime_.PrepareSyncMemset(session_, {buffer + 32, bytes, 0x5a, bytes});
  ASSERT_TRUE(fill.ok()) << fill.status();
  EXPECT_EQ(RunPieceByPiece(*fill), 4);
  const std::vector<uint8_t> out = Read(buffer, bytes + 64);
  for (uint64_t i = 0; i < out.size(); ++i) {
    const bool inside = i >= 32 && i < 32 + bytes;
    ASSERT_EQ(out[i], inside ? 0x5a : 0) << "byte " << i;
  }
}

TEST_F(PiecewiseTransferTest, ACopyMovesEachPieceToTheSameOffsetInEveryDirection) {
  const uint64_t bytes = 2 * kPiece + 7;
  std::vector<uint8_t> host(bytes);
  for (uint64_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>(i * 7 + i / kPiece);
  const uint64_t first = Malloc(bytes);
  const uint64_t second = Malloc(bytes);

  absl::StatusOr<PiecewiseTransfer> upload = runtime_.PrepareSyncCopy(
      session_, Request(CopyRequest::Direction::kHostToDevice, 0, first, host.data(), bytes));
  ASSERT_TRUE(upload.ok()) << upload.status();
  EXPECT_EQ(RunPieceByPiece(*upload), 3);

  absl::StatusOr<PiecewiseTransfer> device_to_device = runtime_.PrepareSyncCopy(
      session_, Request(CopyRequest::Direction::kDeviceToDevice, first, second, nullptr, bytes));
  ASSERT_TRUE(device_to_device.ok()) << device_to_device.status();
  EXPECT_EQ(RunPieceByPiece(*device_to_device), 3);

  std::vector<uint8_t> back(bytes);
  absl::StatusOr<PiecewiseTransfer> download = runtime_.PrepareSyncCopy(
      session_, Request(CopyRequest::Direction::kDeviceToHost, second, 0, back.data(), bytes));
  ASSERT_TRUE(download.ok()) << download.status();
  EXPECT_EQ(RunPieceByPiece(*download), 3);
  EXPECT_EQ(back, host);
}

TEST_F(PiecewiseTransferTest, ItKeepsItsMemoryUntilItIsDone) {
  const uint64_t bytes = 2 * kPiece;
  const uint64_t buffer = Malloc(bytes);
  absl::StatusOr<PiecewiseTransfer> fill =
      runtime_.PrepareSyncMemset(session_, {buffer, bytes, 1, bytes});
  ASSERT_TRUE(fill.ok()) << fill.status();
  ASSERT_TRUE(fill->RunFor(absl::ZeroDuration()).ok());
  // Freed (and the session gone) between two pieces: the range stays the
  // transfer's, so no later allocation can be written by its rest.
  ASSERT_TRUE(runtime_.Free(session_, buffer).ok());
  ASSERT_TRUE(runtime_.CloseSession(session_));
  const SessionId other = runtime_.OpenSession({101, 0, 0, "other"});
  ASSERT_TRUE(runtime_.Initialize(other, {}).ok());
  auto free_bytes = [&] {
    absl::StatusOr<MemInfo> info = runtime_.GetMemInfo(other, 0);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->free : 0;
  };
  const uint64_t free_while_running = free_bytes();
  ASSERT_TRUE(fill->RunFor(absl::InfiniteDuration()).ok());
  EXPECT_TRUE(fill->finished());
  EXPECT_GE(free_bytes(), free_while_running + bytes) << "the range was not the transfer's";
}

TEST_F(PiecewiseTransferTest, RangesAreCheckedWhenPrepared) {
  const uint64_t buffer = Malloc(kPiece);
  EXPECT_FALSE(runtime_.PrepareSyncMemset(session_, {buffer, 2 * kPiece, 0, 2 * kPiece}).ok());
  EXPECT_FALSE(runtime_.PrepareSyncMemset(session_, {buffer, 1, 0, 2}).ok());
  EXPECT_FALSE(runtime_
                   .PrepareSyncCopy(session_, Request(CopyRequest::Direction::kDeviceToDevice,
                                                      buffer, buffer + kPiece / 2, nullptr, kPiece))
                   .ok());
}

}  // namespace
}  // namespace acld
