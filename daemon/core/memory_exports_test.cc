#include "daemon/core/memory_exports.h"

#include <cstring>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_backend.h"
#include "hal/sim/sim_memory.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

constexpr SessionId kOwner = 1, kImporter = 2, kStranger = 3;

class MemoryExportsTest : public ::testing::Test {
 protected:
  MemoryExportsTest()
      : backend_(hal::sim::CreateSimBackend({2, 1 << 20})),
        memory_(*backend_),
        exports_(memory_, [this] { return now_; }) {
    for (SessionId session : {kOwner, kImporter, kStranger}) memory_.AddSession(session, 1000);
    address_ = *memory_.Allocate(kOwner, 0, 4096);
  }

  int Code(const absl::Status& status) { return AclCodeOf(status); }
  // The importer's identity: pid 200, started at tick 50.
  KernelIdentity Importer(uint64_t start = 50) { return KernelIdentity{kImporter, 200, start}; }

  uint64_t now_ = 100;
  std::unique_ptr<hal::Backend> backend_;
  MemoryManager memory_;
  MemoryExports exports_;
  uint64_t address_ = 0;
};

TEST_F(MemoryExportsTest, KeysAreRandomHexAndReachExactlyTheExportedRange) {
  const std::string key = *exports_.Export(kOwner, address_ + 1024, 1024, 1);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*exports_.Export(kOwner, address_ + 1024, 1024, 1), key);
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_ + 1024, 1).status()), ACL_ERROR_INVALID_PARAM);
  const uint64_t imported = *exports_.Import(Importer(), key);
  EXPECT_EQ(imported, address_ + 1024);
  EXPECT_TRUE(memory_.Resolve(kImporter, imported, 1024).ok());
  EXPECT_EQ(Code(memory_.Resolve(kImporter, imported, 1025).status()), ACL_ERROR_INVALID_PARAM)
      << "past the exported range";
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM)
      << "before it, in the same allocation";
  EXPECT_EQ(Code(memory_.Resolve(kStranger, imported, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(memory_.Free(kImporter, address_)), ACL_ERROR_INVALID_PARAM)
      << "an importer cannot free the owner's memory";
}

// An importer cannot make a key of its own for the range: a key without
// the owner's whitelist, which the owner's close would not revoke.
TEST_F(MemoryExportsTest, AnImportedRangeIsNotExportedAgain) {
  const std::string key = *exports_.Export(kOwner, address_, 4096, 1);
  const uint64_t imported = *exports_.Import(Importer(), key);
  EXPECT_EQ(Code(exports_.Export(kImporter, imported, 4096, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.Export(kImporter, imported + 1024, 1024, 0).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(exports_.Export(kOwner, address_ + 1024, 1024, 1).ok()) << "the owner still may";
}

TEST_F(MemoryExportsTest, OnlyAWhitelistedProcessThatRanBeforeTheEntryMayImport) {
  const std::string key = *exports_.Export(kOwner, address_, 4096, 0);
  EXPECT_EQ(Code(exports_.Import(Importer(), key).status()), ACL_ERROR_RT_NO_PERMISSION)
      << "no whitelist yet";
  ASSERT_TRUE(exports_.SetImportPids(kOwner, key, {200}).ok());
  EXPECT_EQ(Code(exports_.SetImportPids(kStranger, key, {300})), ACL_ERROR_INVALID_PARAM)
      << "only the owner whitelists";
  EXPECT_EQ(Code(exports_.Import(KernelIdentity{kStranger, 300, 50}, key).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  // Pid 200 reused by a process that started after the entry was made.
  EXPECT_EQ(Code(exports_.Import(Importer(/*start=*/150), key).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  EXPECT_TRUE(exports_.Import(Importer(), key).ok());
  // The entry is now bound to that session: another session with pid 200
  // (a later process) does not inherit it, and it dies with the session.
  EXPECT_EQ(Code(exports_.Import(KernelIdentity{kStranger, 200, 50}, key).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  exports_.SessionEnded(kImporter);
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.Import(Importer(), key).status()), ACL_ERROR_RT_NO_PERMISSION);
}

TEST_F(MemoryExportsTest, TheOwnersCloseFreeOrEndRevokesImportsAndSaysWhy) {
  const std::string key = *exports_.Export(kOwner, address_, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), key).ok());
  ResolvedRange in_flight = *memory_.Resolve(kImporter, address_, 8);  // work already launched
  ASSERT_TRUE(exports_.Close(kOwner, key).ok());
  const absl::Status later = memory_.Resolve(kImporter, address_, 8).status();
  EXPECT_EQ(Code(later), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(later.message().find("closed its key"), absl::string_view::npos) << later;
  hal::sim::SimBytes(in_flight.span)[0] = 1;  // still valid (ASan checks)
  EXPECT_EQ(Code(exports_.Import(Importer(), key).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(exports_.Close(kImporter, key).ok()) << "closing a revoked import succeeds";
  EXPECT_EQ(Code(exports_.Close(kImporter, key)), ACL_ERROR_INVALID_PARAM) << "once";

  const std::string again = *exports_.Export(kOwner, address_, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), again).ok());
  ASSERT_TRUE(memory_.Free(kOwner, address_).ok());
  const absl::Status freed = memory_.Resolve(kImporter, address_, 8).status();
  EXPECT_NE(freed.message().find("freed it"), absl::string_view::npos) << freed;
  EXPECT_EQ(Code(exports_.Import(KernelIdentity{kStranger, 9, 1}, again).status()),
            ACL_ERROR_INVALID_PARAM)
      << "an export of freed memory imports nothing";
  EXPECT_EQ(Code(exports_.Import(Importer(), again).status()), ACL_ERROR_INVALID_PARAM)
      << "importing freed memory again answered its old address";

  const uint64_t other = *memory_.Allocate(kOwner, 0, 64);
  const std::string third = *exports_.Export(kOwner, other, 64, 1);
  ASSERT_TRUE(exports_.Import(Importer(), third).ok());
  exports_.SessionEnded(kOwner);
  const absl::Status ended = memory_.Resolve(kImporter, other, 8).status();
  EXPECT_NE(ended.message().find("process ended"), absl::string_view::npos) << ended;
  EXPECT_TRUE(exports_.Snapshot().empty());
}

// A device address is given out again once the memory behind it is gone: an
// export whose owner freed it must not revoke the grants of the allocation
// that has the address now.
TEST_F(MemoryExportsTest, AStaleExportLeavesTheGrantsOfItsAddressesNextAllocation) {
  const std::string stale = *exports_.Export(kOwner, address_, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), stale).ok());
  ASSERT_TRUE(memory_.Free(kOwner, address_).ok());
  const uint64_t reused = *memory_.Allocate(kStranger, 0, 4096);
  ASSERT_EQ(reused, address_) << "the sim gives the freed address out again";
  const std::string fresh = *exports_.Export(kStranger, reused, 4096, 1);
  ASSERT_EQ(*exports_.Import(Importer(), fresh), reused);
  ASSERT_TRUE(exports_.Close(kImporter, stale).ok());
  EXPECT_TRUE(memory_.Resolve(kImporter, reused, 4096).ok()) << "the importer closed the stale key";
  exports_.SessionEnded(kOwner);
  EXPECT_TRUE(memory_.Resolve(kImporter, reused, 4096).ok()) << "the stale key's owner ended";
}

TEST_F(MemoryExportsTest, AnImportersCloseEndsOnlyItsImport) {
  const std::string key = *exports_.Export(kOwner, address_, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), key).ok());
  ASSERT_TRUE(exports_.Import(KernelIdentity{kStranger, 300, 1}, key).ok());
  EXPECT_EQ(exports_.Snapshot()[0].imports.size(), 2u);
  ASSERT_TRUE(exports_.Close(kImporter, key).ok());
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(memory_.Resolve(kStranger, address_, 1).ok());
  EXPECT_EQ(Code(exports_.Close(kImporter, key)), ACL_ERROR_INVALID_PARAM) << "closed already";
}

// An import still in flight when its process ended (the runtime forgets
// its sharing afterwards) grants the ended session nothing.
TEST_F(MemoryExportsTest, AnImportFinishingAfterItsProcessEndedGrantsNothing) {
  const std::string key = *exports_.Export(kOwner, address_, 4096, 1);
  memory_.RemoveSession(kImporter);
  EXPECT_EQ(Code(exports_.Import(Importer(), key).status()), ACL_ERROR_RT_SOCKET_CLOSE);
  exports_.SessionEnded(kImporter);
  EXPECT_TRUE(exports_.Snapshot()[0].imports.empty());
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM);
  ASSERT_TRUE(exports_.Close(kOwner, key).ok());
  EXPECT_TRUE(memory_.Resolve(kOwner, address_, 4096).ok());
}

// An allocation's free revokes its every import under the manager's lock:
// how many it has at once is bounded, over all its keys and importers.
TEST_F(MemoryExportsTest, AnAllocationIsImportedAtMostSoManyTimesAtOnce) {
  constexpr size_t kKeys = 600;
  static_assert(2 * kKeys > MemoryManager::kMaxGrantsPerAllocation, "two importers pass it");
  std::vector<std::string> keys;
  for (size_t i = 0; i < kKeys; ++i) keys.push_back(*exports_.Export(kOwner, address_, 4096, 1));
  for (const std::string& key : keys) ASSERT_TRUE(exports_.Import(Importer(), key).ok());
  const KernelIdentity stranger{kStranger, 300, 1};
  size_t imported = 0;
  for (const std::string& key : keys) {
    absl::StatusOr<uint64_t> import = exports_.Import(stranger, key);
    if (!import.ok()) {
      EXPECT_EQ(Code(import.status()), ACL_ERROR_RT_OVER_LIMIT);
      break;
    }
    ++imported;
  }
  EXPECT_EQ(kKeys + imported, MemoryManager::kMaxGrantsPerAllocation);
  ASSERT_TRUE(exports_.Close(kImporter, keys[0]).ok());
  EXPECT_TRUE(exports_.Import(stranger, keys[imported]).ok()) << "a closed import makes room";
}

TEST_F(MemoryExportsTest, RefusesBadArgumentsAndBoundsWhatASessionHolds) {
  EXPECT_EQ(Code(exports_.Export(kOwner, address_, 4096, 2).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.Export(kOwner, address_, 0, 0).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.Export(kOwner, address_, 4097, 0).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.Export(kStranger, address_, 8, 0).status()), ACL_ERROR_INVALID_PARAM)
      << "another session's memory";
  const std::string key = *exports_.Export(kOwner, address_, 8, 0);
  EXPECT_EQ(Code(exports_.SetImportPids(kOwner, key, {})), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.SetImportPids(kOwner, key, {-1})), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(exports_.SetImportPids(kOwner, key, std::vector<int32_t>(
                                                         KernelWhitelist::kMaxEntries + 1, 7))),
            ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_EQ(Code(exports_.Import(KernelIdentity{kOwner, 1, 1}, key).status()),
            ACL_ERROR_INVALID_PARAM)
      << "its own export";
  EXPECT_EQ(Code(exports_.Import(Importer(), std::string(64, 'f')).status()),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(exports_.SetAttribute(kOwner, key, 0, 1).ok());
  EXPECT_EQ(Code(exports_.SetAttribute(kOwner, key, 1, 0)), ACL_ERROR_INVALID_PARAM);
  for (size_t i = 1; i < MemoryExports::kMaxExportsPerSession; ++i) {
    ASSERT_TRUE(exports_.Export(kOwner, address_, 8, 0).ok());
  }
  EXPECT_EQ(Code(exports_.Export(kOwner, address_, 8, 0).status()), ACL_ERROR_RT_OVER_LIMIT);
  ASSERT_TRUE(exports_.Close(kOwner, key).ok());
  EXPECT_TRUE(exports_.Export(kOwner, address_, 8, 0).ok()) << "a close gives the place back";
}

// One owner's whitelists hold at most KernelWhitelist::kMaxEntriesPerOwner
// pids together (each key's own bound let one user's sessions make acld hold
// gigabytes); a closed key gives its entries back, and so does an
// importer's end for the entries it bound.
TEST_F(MemoryExportsTest, AnOwnersWhitelistsTogetherAreBounded) {
  constexpr size_t kPerKey = KernelWhitelist::kMaxEntries;
  constexpr size_t kKeys = KernelWhitelist::kMaxEntriesPerOwner / kPerKey;
  std::vector<std::string> keys;
  for (size_t i = 0; i < kKeys; ++i) {
    keys.push_back(*exports_.Export(kOwner, address_, 8, 0));
    std::vector<int32_t> pids(kPerKey, 300);
    pids[0] = 200;  // the importer's
    ASSERT_TRUE(exports_.SetImportPids(kOwner, keys.back(), pids).ok()) << i;
  }
  const std::string one_more = *exports_.Export(kOwner, address_, 8, 0);
  const absl::Status refused = exports_.SetImportPids(kOwner, one_more, {200});
  EXPECT_EQ(Code(refused), ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_NE(refused.message().find("at most 4096"), absl::string_view::npos) << refused;
  // The importer binds an entry of the first key; its end takes that entry.
  ASSERT_TRUE(exports_.Import(Importer(), keys[0]).ok());
  exports_.SessionEnded(kImporter);
  EXPECT_TRUE(exports_.SetImportPids(kOwner, one_more, {200}).ok()) << "the bound entry went";
  EXPECT_EQ(Code(exports_.SetImportPids(kOwner, one_more, {200})), ACL_ERROR_RT_OVER_LIMIT);
  ASSERT_TRUE(exports_.Close(kOwner, keys[1]).ok());
  EXPECT_TRUE(exports_.SetImportPids(kOwner, one_more, std::vector<int32_t>(kPerKey - 2, 300)).ok())
      << "a closed key's entries went";
}

// A session that imported two keys of the same range holds two grants:
// closing one leaves the other (before, both went at once).
TEST_F(MemoryExportsTest, ClosingOneOfTwoKeysOfARangeLeavesTheOther) {
  const std::string first = *exports_.Export(kOwner, address_, 4096, 1);
  const std::string second = *exports_.Export(kOwner, address_, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), first).ok());
  ASSERT_TRUE(exports_.Import(Importer(), second).ok());
  ASSERT_TRUE(exports_.Close(kImporter, first).ok());
  EXPECT_TRUE(memory_.Resolve(kImporter, address_, 4096).ok()) << "the second key's import";
  ASSERT_TRUE(exports_.Close(kOwner, second).ok());
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(exports_.Close(kImporter, second).ok()) << "revoked first: its close still succeeds";
}

// An export's end revokes all its imports in one pass, and a session's end
// touches only its own keys: others' exports and imports stay.
TEST_F(MemoryExportsTest, ASessionsEndLeavesOtherSessionsExportsAlone) {
  const uint64_t strangers = *memory_.Allocate(kStranger, 0, 4096);
  const std::string owners = *exports_.Export(kOwner, address_, 4096, 1);
  const std::string other = *exports_.Export(kStranger, strangers, 4096, 1);
  ASSERT_TRUE(exports_.Import(Importer(), owners).ok());
  ASSERT_TRUE(exports_.Import(Importer(), other).ok());
  exports_.SessionEnded(kOwner);
  EXPECT_EQ(Code(memory_.Resolve(kImporter, address_, 1).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(memory_.Resolve(kImporter, strangers, 4096).ok());
  EXPECT_EQ(exports_.Snapshot().size(), 1u);
  exports_.SessionEnded(kImporter);
  ASSERT_EQ(exports_.Snapshot().size(), 1u);
  EXPECT_TRUE(exports_.Snapshot()[0].imports.empty());
}

}  // namespace
}  // namespace acld
