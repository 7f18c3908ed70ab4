#include "daemon/core/device_object_ledger.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

using Ledger = DeviceObjectLedger;

// A tenant holds at most its share of each device's number, each kind and
// device on its own; a charge that goes gives its place back; another
// tenant has its own share.
TEST(DeviceObjectLedgerTest, ATenantHoldsAtMostItsShareOfEachKindOnEachDevice) {
  Ledger ledger({{8, 40}, {0, 0}}, 25);
  EXPECT_EQ(ledger.Share(0, Ledger::kStream), 2u);
  EXPECT_EQ(ledger.Share(0, Ledger::kEvent), 10u);
  EXPECT_EQ(ledger.Share(1, Ledger::kStream), 0u) << "no fixed number: no share";
  EXPECT_EQ(ledger.Share(7, Ledger::kStream), 0u) << "no such device";
  const Tenant uid(1000, nullptr);
  std::vector<std::shared_ptr<void>> charges;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::shared_ptr<void>> charge = ledger.Charge(uid, 0, Ledger::kStream, "call");
    ASSERT_TRUE(charge.ok()) << charge.status();
    ASSERT_NE(*charge, nullptr);
    charges.push_back(*charge);
  }
  const absl::Status refused = ledger.Charge(uid, 0, Ledger::kStream, "aclrtCreateStream").status();
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_NO_STREAM_RESOURCE);
  EXPECT_EQ(refused.message(),
            "aclrtCreateStream: the processes of uid 1000 may hold at most 2 of this device's 8 "
            "streams together (--device_share_per_uid=25%); they hold 2");
  EXPECT_EQ(AclCodeOf(ledger.Charge(uid, 0, Ledger::kStream, "call").status()),
            ACL_ERROR_RT_NO_STREAM_RESOURCE)
      << "a refusal takes nothing";
  EXPECT_TRUE(ledger.Charge(uid, 0, Ledger::kEvent, "call").ok()) << "events have their own";
  Ledger notifies({{0, 0, 4}}, 25);
  std::shared_ptr<void> notify = *notifies.Charge(uid, 0, Ledger::kNotify, "a point");
  const absl::Status no_notify = notifies.Charge(uid, 0, Ledger::kNotify, "a point").status();
  EXPECT_EQ(AclCodeOf(no_notify), ACL_ERROR_RT_NO_NOTIFY_RESOURCE);
  EXPECT_EQ(no_notify.message(),
            "a point: the processes of uid 1000 may hold at most 1 of this device's 4 notifies "
            "together (--device_share_per_uid=25%); they hold 1");
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(ledger.Charge(uid, 1, Ledger::kStream, "call").ok()) << "device 1 has no number";
  }
  EXPECT_TRUE(ledger.Charge(Tenant(1001, nullptr), 0, Ledger::kStream, "call").ok());
  EXPECT_EQ(ledger.Held(uid, 0, Ledger::kStream), 2u);
  EXPECT_EQ(ledger.HeldOnDevice(0, Ledger::kStream), 2u) << "the other tenant's charge went";

  charges.pop_back();
  EXPECT_EQ(ledger.Held(uid, 0, Ledger::kStream), 1u);
  EXPECT_TRUE(ledger.Charge(uid, 0, Ledger::kStream, "call").ok());
}

TEST(DeviceObjectLedgerTest, AWholeShareChecksNothingAndAShareIsAtLeastOne) {
  Ledger whole({{8, 8}}, 100);
  EXPECT_EQ(whole.percent(), 100u);
  EXPECT_EQ(whole.Share(0, Ledger::kStream), 0u);
  std::vector<std::shared_ptr<void>> charges;
  for (int i = 0; i < 20; ++i) charges.push_back(*whole.Charge(Tenant(), 0, Ledger::kStream, "c"));
  EXPECT_EQ(whole.HeldOnDevice(0, Ledger::kStream), 20u) << "counted, the device refuses itself";
  EXPECT_EQ(whole.DeviceNumber(0, Ledger::kStream), 8u);

  Ledger tiny({{3, 3}}, 10);
  EXPECT_EQ(tiny.Share(0, Ledger::kStream), 1u);
  Ledger large({{UINT32_MAX, UINT32_MAX}}, 99);  // no overflow in the product
  EXPECT_EQ(large.Share(0, Ledger::kEvent), static_cast<uint32_t>(uint64_t{UINT32_MAX} * 99 / 100));
}

// Charges may go on any thread, after the ledger too; All() lists only what
// is held.
TEST(DeviceObjectLedgerTest, ChargesGoOnAnyThreadAndMayOutliveTheLedger) {
  std::vector<std::shared_ptr<void>> kept;
  {
    Ledger ledger({{1000, 1000}, {1000, 1000}}, 50);
    std::vector<std::thread> threads;
    std::vector<std::vector<std::shared_ptr<void>>> held(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 100; ++i) {
          held[t].push_back(*ledger.Charge(Tenant(1000 + t % 2, nullptr), t / 2,
                                           i % 2 == 0 ? Ledger::kStream : Ledger::kEvent, "c"));
        }
        held[t].resize(10);
      });
    }
    for (std::thread& thread : threads) thread.join();
    const auto all = ledger.All();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all.at(Tenant(1000, nullptr)).at(0), (Ledger::Counts{5, 5}));
    EXPECT_EQ(all.at(Tenant(1001, nullptr)).at(1), (Ledger::Counts{5, 5}));
    kept = held[0];
    for (auto& each : held) each.clear();
    EXPECT_EQ(ledger.All().size(), 1u);
  }
  kept.clear();  // after the ledger: nothing to crash on
}

}  // namespace
}  // namespace acld
