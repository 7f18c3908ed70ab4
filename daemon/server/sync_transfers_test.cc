#include "daemon/server/sync_transfers.h"

#include <deque>
#include <functional>
#include <vector>

#include "daemon/core/runtime.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_backend.h"

namespace acld::server {
namespace {

constexpr uint64_t kPiece = PiecewiseTransfer::kPieceBytes;

class SyncTransfersTest : public ::testing::Test {
 protected:
  SyncTransfersTest() : runtime_(hal::sim::CreateSimBackend({1, 64 << 20})) {
    session_ = runtime_.OpenSession({100, 0, 0, "sync"});
    EXPECT_TRUE(runtime_.Initialize(session_, {}).ok());
    // A zero slice runs one piece: each posted task is exactly one piece.
    transfers_ = std::make_shared<SyncTransfers>(
        SyncTransfers::Threads{
            [this](std::function<void()> task) { posted_.push_back(std::move(task)); },
            [this] { return others_waiting_; }},
        absl::ZeroDuration());
  }

  // A fill of `pieces` pieces with `value`, on memory of its own.
  PiecewiseTransfer Fill(int pieces, uint8_t value, uint64_t* address) {
    const uint64_t bytes = pieces * kPiece;
    *address = *runtime_.Malloc(session_, 0, bytes);
    return *runtime_.PrepareSyncMemset(session_, {*address, bytes, value, bytes});
  }

  uint8_t ByteAt(uint64_t address) {
    uint8_t byte = 0;
    CopyRequest copy;
    copy.direction = CopyRequest::Direction::kDeviceToHost;
    copy.device_src = address;
    copy.count = 1;
    copy.host = HostSpan{&byte, nullptr, 1};
    EXPECT_TRUE(runtime_.Copy(session_, copy).ok());
    return byte;
  }

  // Runs the oldest posted task; false when none is posted.
  bool RunPosted() {
    if (posted_.empty()) return false;
    std::function<void()> task = std::move(posted_.front());
    posted_.pop_front();
    task();
    return true;
  }

  Runtime runtime_;
  SessionId session_ = 0;
  std::deque<std::function<void()>> posted_;
  bool others_waiting_ = true;  // a slice is one piece
  std::shared_ptr<SyncTransfers> transfers_;
};

TEST_F(SyncTransfersTest, OneSliceAtATimeIsQueuedAndTransfersFinishInOrder) {
  std::vector<int> finished;
  uint64_t first = 0, second = 0;
  transfers_->Add(Fill(3, 7, &first), [&](absl::Status status) {
    EXPECT_TRUE(status.ok()) << status;
    finished.push_back(1);
  });
  transfers_->Add(Fill(2, 9, &second), [&](absl::Status status) {
    EXPECT_TRUE(status.ok()) << status;
    finished.push_back(2);
  });
  int slices = 0;
  while (slices < 100) {
    // However many transfers wait, the pool holds one slice of them.
    ASSERT_LE(posted_.size(), 1u);
    if (!RunPosted()) break;
    ++slices;
    if (slices == 3) {
      EXPECT_EQ(finished, std::vector<int>{1});
    }
  }
  EXPECT_EQ(slices, 5);
  EXPECT_EQ(finished, (std::vector<int>{1, 2}));
  EXPECT_EQ(ByteAt(first + 3 * kPiece - 1), 7);
  EXPECT_EQ(ByteAt(second + 2 * kPiece - 1), 9);
  EXPECT_EQ(transfers_->pending(), 0u);
}

TEST_F(SyncTransfersTest, WhileNothingElseWaitsASliceGoesOn) {
  others_waiting_ = false;
  bool answered = false;
  uint64_t address = 0;
  transfers_->Add(Fill(4, 3, &address), [&](absl::Status status) {
    EXPECT_TRUE(status.ok()) << status;
    answered = true;
  });
  ASSERT_TRUE(RunPosted());
  EXPECT_TRUE(answered);
  EXPECT_TRUE(posted_.empty());
  EXPECT_EQ(ByteAt(address + 4 * kPiece - 1), 3);
}

TEST_F(SyncTransfersTest, ClosedTheyRunNoFurtherAndAnswerNobody) {
  bool answered = false;
  uint64_t address = 0;
  transfers_->Add(Fill(3, 5, &address), [&](absl::Status) { answered = true; });
  ASSERT_TRUE(RunPosted());  // the first piece
  transfers_->Close();
  EXPECT_EQ(transfers_->pending(), 0u);
  while (RunPosted()) {
  }
  transfers_->Add(Fill(1, 6, &address), [&](absl::Status) { answered = true; });
  EXPECT_TRUE(posted_.empty());
  EXPECT_FALSE(answered);
}

}  // namespace
}  // namespace acld::server
