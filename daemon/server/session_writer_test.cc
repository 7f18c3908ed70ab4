#include "daemon/server/session_writer.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace acld::server {
namespace {

// A carrier that sends a message only when the test lets it.
class HeldCarrier : public SessionWriter::Carrier {
 public:
  bool Push() override { return !holding_; }
  void Take(const acl::v1::ServerMessage& message) override {
    taken.push_back(message.session_ended().reason());
    holding_ = true;
  }
  bool Idle() const override { return !holding_; }
  void Sent() { holding_ = false; }

  std::vector<std::string> taken;

 private:
  bool holding_ = false;
};

acl::v1::ServerMessage Message(size_t bytes) {
  acl::v1::ServerMessage message;
  message.mutable_session_ended()->set_reason(std::string(bytes, 'r'));
  return message;
}

// What the writer counts for `message` while it holds it.
uint64_t Counted(const acl::v1::ServerMessage& message) {
  return message.ByteSizeLong() + SessionWriter::kCostOfAQueuedMessage;
}

TEST(SessionWriterTest, TheMessageACarrierStillSendsCountsUntilItIsSent) {
  auto carrier = std::make_shared<HeldCarrier>();
  SessionWriter writer;
  writer.SetCarrier(carrier);
  const acl::v1::ServerMessage first = Message(1000);
  writer.Write(first);
  ASSERT_EQ(carrier->taken.size(), 1u);
  // A client that does not read leaves it in the carrier: acld holds it.
  EXPECT_EQ(writer.queued_bytes(), Counted(first));
  writer.Write(Message(10));
  EXPECT_EQ(writer.queued_bytes(), Counted(first) + Counted(Message(10)));
  carrier->Sent();
  writer.Resume();
  ASSERT_EQ(carrier->taken.size(), 2u);
  EXPECT_EQ(writer.queued_bytes(), Counted(Message(10)));
  carrier->Sent();
  writer.Resume();
  EXPECT_EQ(writer.queued_bytes(), 0u);
}

// The session's own bound is its queue's: a large reply the carrier is still
// sending leaves room for one as large behind it.
TEST(SessionWriterTest, TheSessionsBoundIsItsQueuesNotCountingTheCarriersMessage) {
  auto carrier = std::make_shared<HeldCarrier>();
  std::atomic<int> overflows{0};
  std::string why;
  const uint64_t one = Counted(Message(1000));
  SessionWriter writer(/*max_queued_bytes=*/one, [&](const std::string& given) {
    why = given;
    ++overflows;
  });
  writer.SetCarrier(carrier);
  writer.Write(Message(1000));  // in the carrier
  writer.Write(Message(1000));  // queued: at the bound
  EXPECT_EQ(overflows.load(), 0);
  EXPECT_EQ(writer.queued_bytes(), 2 * one);
  writer.Write(Message(10));
  EXPECT_EQ(overflows.load(), 1) << "the queue passed its bound";
  EXPECT_NE(why.find("--max_queued_bytes_per_session"), std::string::npos) << why;
  EXPECT_EQ(writer.queued_bytes(), 0u) << "the queue is dropped";
}

// Tiny messages cost acld more than their bytes: a client that reads none of
// its 2-byte replies meets the bound long before it has sent a bound's worth.
TEST(SessionWriterTest, TinyMessagesCountWhatTheyCostNotOnlyTheirBytes) {
  auto carrier = std::make_shared<HeldCarrier>();
  std::atomic<int> overflows{0};
  SessionWriter writer(/*max_queued_bytes=*/64 << 10, [&](const std::string&) { ++overflows; });
  writer.SetCarrier(carrier);
  acl::v1::ServerMessage tiny;
  tiny.set_call_id(1);
  ASSERT_EQ(tiny.ByteSizeLong(), 2u);
  int written = 0;
  while (overflows.load() == 0 && written < 100000) {
    writer.Write(tiny);
    ++written;
  }
  EXPECT_EQ(overflows.load(), 1);
  EXPECT_LE(written, (64 << 10) / 256 + 2) << "2-byte messages counted as 2 bytes each";
}

TEST(SessionWriterTest, PastItsUsersBudgetTheSessionEndsAndGivesEverythingBack) {
  auto budget = std::make_shared<MessageBudget>(/*per_tenant=*/3000);
  const Tenant user(1000, nullptr);
  // Another session of the same user holds most of the budget.
  MessageBudget::Hold other(budget, user);
  ASSERT_TRUE(other.Resize(1500).ok());
  auto carrier = std::make_shared<HeldCarrier>();
  std::atomic<int> overflows{0};
  SessionWriter writer(/*max_queued_bytes=*/0, [&](const std::string&) { ++overflows; },
                       std::make_unique<MessageBudget::Hold>(budget, user));
  writer.SetCarrier(carrier);
  writer.Write(Message(1000));
  EXPECT_EQ(budget->ByTenant().at(user), 1500 + Counted(Message(1000)));
  EXPECT_EQ(overflows.load(), 0);
  writer.Write(Message(1000));
  EXPECT_EQ(overflows.load(), 1);
  EXPECT_EQ(budget->ByTenant().at(user), 1500u) << "the ended session holds nothing";
  // Its later messages are dropped, charged to nobody.
  writer.Write(Message(10));
  EXPECT_EQ(budget->ByTenant().at(user), 1500u);
  EXPECT_EQ(carrier->taken.size(), 1u);
}

}  // namespace
}  // namespace acld::server
