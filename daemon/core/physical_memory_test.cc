#include "daemon/core/physical_memory.h"

#include "daemon/core/memory_exports.h"

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_backend.h"
#include "hal/sim/sim_memory.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

constexpr SessionId kOwner = 1, kImporter = 2, kStranger = 3;
constexpr uint64_t kGranularity = 2 << 20;  // the sim's

class PhysicalMemoryTest : public ::testing::Test {
 protected:
  PhysicalMemoryTest()
      : backend_(hal::sim::CreateSimBackend({2, 64 << 20})),
        memory_(*backend_),
        physical_(memory_, *backend_, [this] { return now_; }) {
    for (SessionId session : {kOwner, kImporter, kStranger}) memory_.AddSession(session, 1000);
  }

  int Code(const absl::Status& status) { return AclCodeOf(status); }
  // The importer's identity: pid 200, started at tick 50.
  KernelIdentity Importer(uint64_t start = 50) { return KernelIdentity{kImporter, 200, start}; }
  // A reservation of `session` with the whole of a new handle mapped into it.
  struct Mapped {
    uint64_t handle;
    uint64_t address;
  };
  Mapped MapNew(SessionId session, uint64_t handle = 0) {
    if (handle == 0) handle = *physical_.Allocate(session, 0, kGranularity, false);
    const uint64_t address = *physical_.Reserve(session, 0, kGranularity);
    EXPECT_TRUE(physical_.Map(session, address, kGranularity, 0, handle, true).ok());
    return Mapped{handle, address};
  }
  void Write(SessionId session, uint64_t address, uint32_t value) {
    ResolvedRange range = *memory_.Resolve(session, address, sizeof(value));
    std::memcpy(hal::sim::SimBytes(range.span), &value, sizeof(value));
  }
  uint32_t Read(SessionId session, uint64_t address) {
    ResolvedRange range = *memory_.Resolve(session, address, sizeof(uint32_t));
    uint32_t value;
    std::memcpy(&value, hal::sim::SimBytes(range.span), sizeof(value));
    return value;
  }
  uint64_t Used() { return backend_->device(0).used_bytes(); }

  uint64_t now_ = 100;
  std::unique_ptr<hal::Backend> backend_;
  MemoryManager memory_;
  PhysicalMemory physical_;
};

TEST_F(PhysicalMemoryTest, MappedAddressesReachThePhysicalMemoryAndNothingElse) {
  const uint64_t handle = *physical_.Allocate(kOwner, 0, 100, false);  // rounded up to 2 MiB
  EXPECT_EQ(Used(), kGranularity);
  const uint64_t address = *physical_.Reserve(kOwner, 0, 2 * kGranularity);
  EXPECT_EQ(address % kGranularity, 0u);
  EXPECT_EQ(Code(memory_.Resolve(kOwner, address, 1).status()), ACL_ERROR_INVALID_PARAM)
      << "a reservation is backed by nothing until mapped";
  EXPECT_EQ(Code(physical_.Map(kOwner, address, kGranularity, kGranularity, handle, true)),
            ACL_ERROR_INVALID_PARAM)
      << "offset must be 0";
  EXPECT_EQ(Code(physical_.Map(kOwner, address, 4096, 0, handle, true)), ACL_ERROR_INVALID_PARAM)
      << "a mapping is the whole physical memory";
  EXPECT_EQ(Code(physical_.Map(kOwner, address + 4096, kGranularity, 0, handle, true)),
            ACL_ERROR_INVALID_PARAM)
      << "at a multiple of the granularity";
  EXPECT_EQ(Code(physical_.Map(kOwner, address + 2 * kGranularity, kGranularity, 0, handle, true)),
            ACL_ERROR_INVALID_PARAM)
      << "inside the reservation";
  ASSERT_TRUE(physical_.Map(kOwner, address + kGranularity, kGranularity, 0, handle, true).ok());
  EXPECT_EQ(Code(physical_.Map(kOwner, address + kGranularity, kGranularity, 0, handle, true)),
            ACL_ERROR_INVALID_PARAM)
      << "overlapping";
  // The same memory at a second address: both see one set of bytes.
  ASSERT_TRUE(physical_.Map(kOwner, address, kGranularity, 0, handle, true).ok());
  Write(kOwner, address + kGranularity + 8, 0xC0FFEE);
  EXPECT_EQ(Read(kOwner, address + 8), 0xC0FFEEu);
  EXPECT_TRUE(memory_.Resolve(kOwner, address + kGranularity, kGranularity).ok());
  EXPECT_FALSE(memory_.Resolve(kOwner, address + kGranularity, kGranularity + 1).ok())
      << "past the end of the reservation";
  EXPECT_FALSE(memory_.Resolve(kStranger, address + kGranularity, 1).ok());
  EXPECT_EQ(Code(physical_.Map(kStranger, address, kGranularity, 0, handle, true)),
            ACL_ERROR_INVALID_PARAM)
      << "neither the reservation nor the handle are the stranger's";
  EXPECT_EQ(Code(physical_.Unmap(kStranger, address)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(physical_.Free(kStranger, handle)), ACL_ERROR_INVALID_PARAM);

  EXPECT_EQ(Code(physical_.Release(kOwner, address)), ACL_ERROR_INVALID_PARAM)
      << "still mapped";
  ASSERT_TRUE(physical_.Unmap(kOwner, address).ok());
  EXPECT_FALSE(memory_.Resolve(kOwner, address, 1).ok());
  EXPECT_EQ(Code(physical_.Unmap(kOwner, address)), ACL_ERROR_INVALID_PARAM);
  // Freed while mapped: the memory stays until the mapping goes.
  ASSERT_TRUE(physical_.Free(kOwner, handle).ok());
  EXPECT_EQ(Read(kOwner, address + kGranularity + 8), 0xC0FFEEu);
  EXPECT_EQ(Used(), kGranularity);
  ASSERT_TRUE(physical_.Unmap(kOwner, address + kGranularity).ok());
  EXPECT_EQ(Used(), 0u);
  EXPECT_TRUE(physical_.Release(kOwner, address).ok());
  EXPECT_EQ(Code(physical_.Release(kOwner, address)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(memory_.UsageOf(kOwner).bytes, 0u);
}

TEST_F(PhysicalMemoryTest, AMappingIsNotSharedByIpcKey) {
  const Mapped mapped = MapNew(kOwner);
  MemoryExports exports(memory_, [this] { return now_; });
  EXPECT_EQ(Code(exports.Export(kOwner, mapped.address, 4096, 1).status()),
            ACL_ERROR_INVALID_PARAM);
}

TEST_F(PhysicalMemoryTest, NoAccessUntilSetAccessAndNoneTakesItAway) {
  const uint64_t handle = *physical_.Allocate(kOwner, 0, kGranularity, false);
  const uint64_t address = *physical_.Reserve(kOwner, 0, kGranularity);
  ASSERT_TRUE(physical_.Map(kOwner, address, kGranularity, 0, handle, /*accessible=*/false).ok());
  EXPECT_FALSE(memory_.Resolve(kOwner, address, 1).ok());
  EXPECT_EQ(Code(physical_.SetAccess(kOwner, address, 4096, 0, true)), ACL_ERROR_INVALID_PARAM)
      << "the size of the mapping";
  EXPECT_EQ(Code(physical_.SetAccess(kOwner, address, kGranularity, 1, true)),
            ACL_ERROR_INVALID_PARAM)
      << "another device";
  ASSERT_TRUE(physical_.SetAccess(kOwner, address, kGranularity, 0, true).ok());
  EXPECT_TRUE(memory_.Resolve(kOwner, address, kGranularity).ok());
  ASSERT_TRUE(physical_.SetAccess(kOwner, address, kGranularity, 0, false).ok());
  EXPECT_FALSE(memory_.Resolve(kOwner, address, 1).ok());
}

TEST_F(PhysicalMemoryTest, SizesAndDevicesAreChecked) {
  EXPECT_EQ(Code(physical_.Allocate(kOwner, 0, 0, false).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(physical_.Allocate(kOwner, 0, UINT64_MAX - 5, false).status()),
            ACL_ERROR_INVALID_PARAM)
      << "rounding must not overflow";
  EXPECT_EQ(Code(physical_.Allocate(kOwner, 0, 1ull << 40, false).status()),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(Code(physical_.Reserve(kOwner, 0, 0).status()), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Code(physical_.Reserve(kOwner, 0, UINT64_MAX).status()), ACL_ERROR_INVALID_PARAM);
  const uint64_t on_device_1 = *physical_.Allocate(kOwner, 1, kGranularity, false);
  const uint64_t address = *physical_.Reserve(kOwner, 0, kGranularity);
  EXPECT_EQ(Code(physical_.Map(kOwner, address, kGranularity, 0, on_device_1, true)),
            ACL_ERROR_INVALID_PARAM)
      << "a reservation holds memory of its own device";
}

TEST_F(PhysicalMemoryTest, OnlyAWhitelistedOtherProcessImports) {
  const Mapped owner = MapNew(kOwner);
  Write(kOwner, owner.address, 123);
  const uint64_t shareable = *physical_.Export(kOwner, owner.handle, /*pid_validation=*/true);
  EXPECT_NE(shareable, 0u);
  EXPECT_EQ(Code(physical_.Export(kOwner, owner.handle, true).status()), ACL_ERROR_INVALID_PARAM)
      << "one shareable handle per handle";
  EXPECT_EQ(Code(physical_.Import(Importer(), shareable, 0).status()), ACL_ERROR_RT_NO_PERMISSION)
      << "no whitelist yet";
  EXPECT_EQ(Code(physical_.SetImportPids(kStranger, shareable, {200})), ACL_ERROR_INVALID_PARAM)
      << "only the owner whitelists";
  ASSERT_TRUE(physical_.SetImportPids(kOwner, shareable, {200}).ok());
  EXPECT_EQ(Code(physical_.Import(Importer(/*start=*/150), shareable, 0).status()),
            ACL_ERROR_RT_NO_PERMISSION)
      << "pid 200 reused by a process that started after the entry";
  EXPECT_EQ(Code(physical_.Import(KernelIdentity{kOwner, 100, 50}, shareable, 0).status()),
            ACL_ERROR_INVALID_PARAM)
      << "not by its own exporter";
  EXPECT_EQ(Code(physical_.Import(Importer(), shareable ^ 1, 0).status()),
            ACL_ERROR_INVALID_PARAM);
  // Another session of pid 200 (the same process, before a re-init), refused
  // for the device: it does not take the whitelist's entry with it.
  EXPECT_EQ(Code(physical_.Import(KernelIdentity{kStranger, 200, 50}, shareable, 1).status()),
            ACL_ERROR_INVALID_PARAM)
      << "on the memory's device only";
  const uint64_t imported = *physical_.Import(Importer(), shareable, 0);
  const Mapped importer = MapNew(kImporter, imported);
  EXPECT_EQ(Read(kImporter, importer.address), 123u);
  EXPECT_EQ(Code(physical_.Export(kImporter, imported, false).status()), ACL_ERROR_INVALID_PARAM)
      << "an import is not exported again";
  EXPECT_EQ(memory_.UsageOf(kImporter).bytes, 0u) << "charged once, to the exporter";
  EXPECT_EQ(memory_.UsageOf(kOwner).bytes, kGranularity);
  EXPECT_EQ(Code(physical_.Import(KernelIdentity{kStranger, 200, 50}, shareable, 0).status()),
            ACL_ERROR_RT_NO_PERMISSION)
      << "the entry is bound to the importer's session";
  ASSERT_EQ(physical_.Snapshot().size(), 1u);
  EXPECT_EQ(physical_.Snapshot()[0].imports.size(), 1u);
}

TEST_F(PhysicalMemoryTest, TheOwnersFreeRevokesImportsAndSaysWhy) {
  const Mapped owner = MapNew(kOwner);
  const uint64_t shareable = *physical_.Export(kOwner, owner.handle, false);
  const uint64_t imported = *physical_.Import(Importer(), shareable, 0);
  const Mapped importer = MapNew(kImporter, imported);
  // Work the importer already launched holds its pin.
  ResolvedRange pinned = *memory_.Resolve(kImporter, importer.address, 4);
  ASSERT_TRUE(physical_.Unmap(kOwner, owner.address).ok());
  ASSERT_TRUE(physical_.Free(kOwner, owner.handle).ok());
  const absl::Status refused = memory_.Resolve(kImporter, importer.address, 4).status();
  EXPECT_EQ(Code(refused), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(refused.message().find("the exporting process freed it"), std::string::npos)
      << refused.message();
  EXPECT_EQ(Code(physical_.Import(Importer(), shareable, 0).status()), ACL_ERROR_INVALID_PARAM)
      << "the shareable handle ended with the free";
  EXPECT_EQ(Used(), kGranularity) << "pinned by the importer's work";
  pinned = ResolvedRange{};
  EXPECT_EQ(Used(), 0u);
  // The importer's own cleanup still succeeds.
  EXPECT_TRUE(physical_.Unmap(kImporter, importer.address).ok());
  EXPECT_TRUE(physical_.Release(kImporter, importer.address).ok());
  EXPECT_TRUE(physical_.Free(kImporter, imported).ok());
  EXPECT_TRUE(physical_.Snapshot().empty());
}

// An importer that frees its handle while it is still mapped keeps nothing
// past the owner's free: its mapping is revoked as any, and a handle it
// retains from that mapping is revoked too.
TEST_F(PhysicalMemoryTest, AnImportFreedWhileMappedIsStillRevokedByTheOwnersFree) {
  const Mapped owner = MapNew(kOwner);
  Write(kOwner, owner.address, 77);
  const uint64_t shareable = *physical_.Export(kOwner, owner.handle, false);
  const uint64_t imported = *physical_.Import(Importer(), shareable, 0);
  const Mapped importer = MapNew(kImporter, imported);
  const Mapped second = MapNew(kImporter, imported);
  ASSERT_TRUE(physical_.Free(kImporter, imported).ok());
  EXPECT_EQ(Read(kImporter, importer.address), 77u) << "mapped memory outlives its handle's free";
  ASSERT_EQ(physical_.Snapshot().at(0).imports.size(), 1u);
  ASSERT_TRUE(physical_.Unmap(kImporter, second.address).ok());
  ASSERT_EQ(physical_.Snapshot().at(0).imports.size(), 1u) << "one mapping is left";
  const uint64_t retained = *physical_.Retain(kImporter, importer.address);

  ASSERT_TRUE(physical_.Free(kOwner, owner.handle).ok());  // the owner keeps its own mapping
  const absl::Status refused = memory_.Resolve(kImporter, importer.address, 4).status();
  EXPECT_EQ(Code(refused), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(refused.message().find("the exporting process freed it"), std::string::npos)
      << refused.message();
  EXPECT_FALSE(*physical_.Readable(kImporter, importer.address, 0));
  EXPECT_EQ(Read(kOwner, owner.address), 77u);
  EXPECT_TRUE(physical_.Free(kImporter, retained).ok());
  EXPECT_TRUE(physical_.Unmap(kImporter, importer.address).ok());
  ASSERT_TRUE(physical_.Unmap(kOwner, owner.address).ok());
  EXPECT_EQ(Used(), 0u);
}

// Once its last mapping goes, a freed import leaves its export.
TEST_F(PhysicalMemoryTest, AnImportFreedWhileMappedLeavesItsExportWithItsLastMapping) {
  const Mapped owner = MapNew(kOwner);
  const uint64_t shareable = *physical_.Export(kOwner, owner.handle, false);
  const uint64_t imported = *physical_.Import(Importer(), shareable, 0);
  const Mapped importer = MapNew(kImporter, imported);
  ASSERT_TRUE(physical_.Free(kImporter, imported).ok());
  ASSERT_TRUE(physical_.Unmap(kImporter, importer.address).ok());
  EXPECT_TRUE(physical_.Snapshot().at(0).imports.empty());
  const Mapped again = MapNew(kImporter, *physical_.Import(Importer(), shareable, 0));
  (void)physical_.SessionEnded(kImporter);
  memory_.ReleaseSession(kImporter);
  EXPECT_TRUE(physical_.Snapshot().at(0).imports.empty());
  (void)again;
}

TEST_F(PhysicalMemoryTest, AnEndedExporterRevokesAndAnEndedImporterLeaksNothing) {
  const Mapped owner = MapNew(kOwner);
  const uint64_t shareable = *physical_.Export(kOwner, owner.handle, false);
  const Mapped importer = MapNew(kImporter, *physical_.Import(Importer(), shareable, 0));
  (void)physical_.SessionEnded(kImporter);
  memory_.ReleaseSession(kImporter);
  EXPECT_TRUE(physical_.Snapshot().at(0).imports.empty());
  EXPECT_FALSE(memory_.Resolve(kImporter, importer.address, 1).ok());

  const Mapped again = MapNew(kStranger, *physical_.Import({kStranger, 300, 50}, shareable, 0));
  (void)physical_.SessionEnded(kOwner);
  memory_.ReleaseSession(kOwner);
  const absl::Status refused = memory_.Resolve(kStranger, again.address, 1).status();
  EXPECT_NE(refused.message().find("the exporting process ended"), std::string::npos)
      << refused.message();
  EXPECT_EQ(Used(), 0u);
  EXPECT_TRUE(physical_.Snapshot().empty());
}

TEST_F(PhysicalMemoryTest, ReservedAddressesAreBoundedPerSessionAndReused) {
  // The sim device has 64 MiB: a session may hold 128 MiB of addresses.
  const uint64_t bound = PhysicalMemory::kReservedPerMemory * (64 << 20);
  EXPECT_EQ(Code(physical_.Reserve(kOwner, 0, bound + kGranularity).status()),
            ACL_ERROR_RT_OVER_LIMIT);
  const uint64_t all = *physical_.Reserve(kOwner, 0, bound);
  EXPECT_EQ(Code(physical_.Reserve(kOwner, 0, kGranularity).status()), ACL_ERROR_RT_OVER_LIMIT);
  ASSERT_TRUE(physical_.Release(kOwner, all).ok());
  // Reserving and releasing in a loop does not use up the device's window.
  for (int i = 0; i < 100; ++i) {
    const uint64_t again = *physical_.Reserve(kOwner, 0, bound);
    EXPECT_EQ(again, all);
    ASSERT_TRUE(physical_.Release(kOwner, again).ok());
  }
}

TEST_F(PhysicalMemoryTest, RetainAddsAReferenceAndPropertiesAndAccessAreAsMade) {
  const uint64_t handle = *physical_.Allocate(kOwner, 1, kGranularity, /*huge_pages=*/true);
  EXPECT_EQ(physical_.PropertiesOf(kOwner, handle)->device, 1);
  EXPECT_TRUE(physical_.PropertiesOf(kOwner, handle)->huge_pages);
  EXPECT_EQ(Code(physical_.PropertiesOf(kStranger, handle).status()), ACL_ERROR_INVALID_PARAM);
  const uint64_t address = *physical_.Reserve(kOwner, 1, kGranularity);
  ASSERT_TRUE(physical_.Map(kOwner, address, kGranularity, 0, handle, /*accessible=*/false).ok());
  EXPECT_FALSE(*physical_.Readable(kOwner, address, 1));
  ASSERT_TRUE(physical_.SetAccess(kOwner, address, kGranularity, 1, true).ok());
  EXPECT_TRUE(*physical_.Readable(kOwner, address, 1));
  EXPECT_FALSE(*physical_.Readable(kOwner, address, 0)) << "another device";
  EXPECT_EQ(Code(physical_.Readable(kOwner, address + 4096, 1).status()), ACL_ERROR_INVALID_PARAM);

  EXPECT_EQ(*physical_.Retain(kOwner, address), handle) << "the same handle, one more reference";
  ASSERT_TRUE(physical_.Free(kOwner, handle).ok());
  EXPECT_TRUE(physical_.PropertiesOf(kOwner, handle).ok()) << "one reference left";
  ASSERT_TRUE(physical_.Free(kOwner, handle).ok());
  EXPECT_FALSE(physical_.PropertiesOf(kOwner, handle).ok());
  // Freed while mapped: retaining brings the handle back.
  const uint64_t again = *physical_.Retain(kOwner, address);
  EXPECT_TRUE(physical_.PropertiesOf(kOwner, again)->huge_pages);
  ASSERT_TRUE(physical_.Unmap(kOwner, address).ok());
  ASSERT_TRUE(physical_.Free(kOwner, again).ok());
  EXPECT_EQ(backend_->device(1).used_bytes(), 0u);
}

TEST(PhysicalMemoryBoundsTest, EachSessionHoldsABoundedNumberOfReservations) {
  // A device large enough that the count, not the addresses, is the bound.
  std::unique_ptr<hal::Backend> backend = hal::sim::CreateSimBackend({1, uint64_t{2} << 30});
  MemoryManager memory(*backend);
  PhysicalMemory physical(memory, *backend, [] { return 0; });
  for (size_t i = 0; i < PhysicalMemory::kMaxPerSession; ++i) {
    ASSERT_TRUE(physical.Reserve(kOwner, 0, kGranularity).ok()) << i;
  }
  EXPECT_EQ(AclCodeOf(physical.Reserve(kOwner, 0, kGranularity).status()),
            ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_TRUE(physical.Reserve(kImporter, 0, kGranularity).ok()) << "per session";
}

TEST(PhysicalMemoryBoundsTest, ConcurrentAllocationsNeverPassTheHandleBound) {
  // Room for more than the bound, so that only the count refuses.
  std::unique_ptr<hal::Backend> backend = hal::sim::CreateSimBackend({1, uint64_t{3} << 30});
  MemoryManager memory(*backend);
  memory.AddSession(kOwner, 1000);
  PhysicalMemory physical(memory, *backend, [] { return 0; });
  constexpr int kThreads = 4, kEach = 300;  // 1,200 calls for 1,024 slots
  std::atomic<uint64_t> granted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        absl::StatusOr<uint64_t> handle = physical.Allocate(kOwner, 0, kGranularity, false);
        if (handle.ok()) {
          ++granted;
        } else if (AclCodeOf(handle.status()) == ACL_ERROR_RT_OVER_LIMIT) {
          ++refused;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), PhysicalMemory::kMaxPerSession);
  EXPECT_EQ(refused.load(), kThreads * kEach - PhysicalMemory::kMaxPerSession);
  EXPECT_EQ(physical.UsageOf(kOwner).handles, PhysicalMemory::kMaxPerSession);
  // What the losers of a race allocated went back to the device.
  EXPECT_EQ(backend->device(0).used_bytes(), PhysicalMemory::kMaxPerSession * kGranularity);
  (void)physical.SessionEnded(kOwner);
  memory.ReleaseSession(kOwner);
  EXPECT_EQ(backend->device(0).used_bytes(), 0u);
}

// One export is imported at most kMaxImportsPerExport times at once (its
// owner's free revokes them all under the runtime's lock); an importer's free
// makes room, and the owner's free revokes every import.
TEST_F(PhysicalMemoryTest, AnExportIsImportedABoundedNumberOfTimes) {
  const uint64_t owner = *physical_.Allocate(kOwner, 0, kGranularity, false);
  const uint64_t shareable = *physical_.Export(kOwner, owner, /*pid_validation=*/false);
  std::vector<uint64_t> imports;
  for (SessionId session = 10; imports.size() < PhysicalMemory::kMaxImportsPerExport; ++session) {
    for (size_t i = 0; i < PhysicalMemory::kMaxImportsPerImporter &&
                       imports.size() < PhysicalMemory::kMaxImportsPerExport;
         ++i) {
      imports.push_back(*physical_.Import(KernelIdentity{session, 300, 50}, shareable, 0));
    }
  }
  const absl::Status refused = physical_.Import(Importer(), shareable, 0).status();
  EXPECT_EQ(Code(refused), ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_NE(refused.message().find("imported 1024 times"), absl::string_view::npos) << refused;
  ASSERT_TRUE(physical_.Free(10, imports[0]).ok());
  const uint64_t imported = *physical_.Import(Importer(), shareable, 0);
  ASSERT_EQ(physical_.Snapshot().size(), 1u);
  EXPECT_EQ(physical_.Snapshot()[0].imports.size(), PhysicalMemory::kMaxImportsPerExport);
  ASSERT_TRUE(physical_.Free(kOwner, owner).ok());
  EXPECT_TRUE(physical_.Snapshot().empty());
  EXPECT_TRUE(physical_.Free(kImporter, imported).ok()) << "importers still free theirs";
}

// What a session's end or reset lets go of is handed to the caller, which
// frees it once it holds no lock (the runtime's is held then).
TEST_F(PhysicalMemoryTest, TheMemoryASessionsEndLetsGoOfIsFreedByTheCaller) {
  MapNew(kOwner);
  const uint64_t shareable =
      *physical_.Export(kOwner, *physical_.Allocate(kOwner, 0, kGranularity, false), false);
  ASSERT_TRUE(physical_.Import(Importer(), shareable, 0).ok());
  ASSERT_EQ(Used(), 2 * kGranularity);
  PhysicalMemory::Dropped dropped = physical_.SessionEnded(kOwner);
  EXPECT_FALSE(dropped.empty());
  EXPECT_EQ(Used(), 2 * kGranularity) << "freed before the caller let go";
  dropped.clear();
  EXPECT_EQ(Used(), 0u) << "the importer's revoked handle kept the memory";
}

// One importer takes a bounded share of an export's places: the other
// processes its owner let in can still import it.
TEST_F(PhysicalMemoryTest, OneImporterTakesABoundedShareOfAnExportsPlaces) {
  const uint64_t owner = *physical_.Allocate(kOwner, 0, kGranularity, false);
  const uint64_t shareable = *physical_.Export(kOwner, owner, /*pid_validation=*/false);
  std::vector<uint64_t> imports;
  for (size_t i = 0; i < PhysicalMemory::kMaxImportsPerImporter; ++i) {
    imports.push_back(*physical_.Import(Importer(), shareable, 0));
  }
  const absl::Status refused = physical_.Import(Importer(), shareable, 0).status();
  EXPECT_EQ(Code(refused), ACL_ERROR_RT_OVER_LIMIT);
  EXPECT_NE(refused.message().find("this process imported the memory 16 times"),
            absl::string_view::npos)
      << refused;
  EXPECT_TRUE(physical_.Import(KernelIdentity{kImporter + 1, 300, 50}, shareable, 0).ok())
      << "another importer was refused";
  ASSERT_TRUE(physical_.Free(kImporter, imports[0]).ok());
  EXPECT_TRUE(physical_.Import(Importer(), shareable, 0).ok()) << "its free made no room";
}

// A handle freed while mapped and retained again is exported again (its
// first export ended with the free).
TEST_F(PhysicalMemoryTest, ARetainedHandleIsExportedAgain) {
  const Mapped owner = MapNew(kOwner);
  ASSERT_TRUE(physical_.Export(kOwner, owner.handle, false).ok());
  ASSERT_TRUE(physical_.Free(kOwner, owner.handle).ok());
  EXPECT_TRUE(physical_.Snapshot().empty());
  const uint64_t retained = *physical_.Retain(kOwner, owner.address);
  EXPECT_TRUE(physical_.Export(kOwner, retained, false).ok());
}

// An owner's shareable handles' whitelists hold at most
// KernelWhitelist::kMaxEntriesPerOwner pids together.
TEST_F(PhysicalMemoryTest, AnOwnersWhitelistsTogetherAreBounded) {
  size_t held = 0;
  uint64_t shareable = 0;
  while (held < KernelWhitelist::kMaxEntriesPerOwner) {
    const uint64_t handle = *physical_.Allocate(kOwner, 0, kGranularity, false);
    shareable = *physical_.Export(kOwner, handle, true);
    ASSERT_TRUE(physical_
                    .SetImportPids(kOwner, shareable,
                                   std::vector<int32_t>(KernelWhitelist::kMaxEntries, 300))
                    .ok());
    held += KernelWhitelist::kMaxEntries;
  }
  const uint64_t handle = *physical_.Allocate(kOwner, 0, kGranularity, false);
  const uint64_t last = *physical_.Export(kOwner, handle, true);
  EXPECT_EQ(Code(physical_.SetImportPids(kOwner, last, {200})), ACL_ERROR_RT_OVER_LIMIT);
  (void)physical_.Released(kOwner, 0);  // a reset: every export ends
  const uint64_t again = *physical_.Allocate(kOwner, 0, kGranularity, false);
  EXPECT_TRUE(physical_.SetImportPids(kOwner, *physical_.Export(kOwner, again, true), {200}).ok());
}

}  // namespace
}  // namespace acld
