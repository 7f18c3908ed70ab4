#include "daemon/server/client_memory.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace acld::server {
namespace {

// For `memory` mapped at `base`: null once sealed, the filling of an older
// client's memory otherwise (dropped before the unmap).
absl::StatusOr<std::unique_ptr<FilledFromClient>> PrepareClientMemory(
    const ReceivedMemory& memory, void* base, uint64_t size, std::function<void()> on_given_up,
    absl::Duration wait) {
  if (!SealedForGood(memory.fd.get()) || AcceptsUnsealableMemory()) {
    absl::Status sealed = SealClientMemory(memory.fd.get(), size, memory.sender, wait);
    if (!sealed.ok()) return sealed;
    return nullptr;
  }
  auto refused = [](const absl::Status& why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory sealed with F_SEAL_SEAL (a libascendcl before protocol version 5) cannot "
        "be sealed against hole punching, and acld cannot fill its holes from the client's own "
        "mapping (",
        why.message(),
        "); upgrade libascendcl, or start acld with --map_unsealed_client_memory where every "
        "local user is trusted"));
  };
  if (absl::Status can = CanFillFromClients(); !can.ok()) return refused(can);
  // The look reads the sender's memory map, which the sender can make wait.
  auto own = std::make_shared<UniqueFd>(fcntl(memory.fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!own->valid()) return refused(absl::ResourceExhaustedError("no descriptor left"));
  auto found = std::make_shared<absl::StatusOr<ClientMapping>>(absl::UnknownError("not looked"));
  const pid_t pid = memory.sender_pid;
  const uint64_t start_ticks = memory.sender_start_ticks;
  absl::Status looked = RunForSender(
      memory.sender,
      [own, found, pid, start_ticks, size] {
        *found = FindClientMapping(pid, start_ticks, own->get(), size);
        return found->status();
      },
      wait);
  if (!looked.ok()) return refused(looked);
  absl::StatusOr<std::unique_ptr<FilledFromClient>> filled =
      FillFromClient(base, size, std::move(**found), memory.sender, std::move(on_given_up));
  if (!filled.ok()) return refused(filled.status());
  return filled;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedClientMemory>> MappedClientMemory::Map(
    const ReceivedMemory& memory, uint64_t size, std::function<void()> on_given_up,
    absl::Duration wait) {
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd.get(), 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", size, " bytes of shared memory: ", std::strerror(errno)));
  }
  absl::StatusOr<std::unique_ptr<FilledFromClient>> filled =
      PrepareClientMemory(memory, base, size, std::move(on_given_up), wait);
  if (!filled.ok()) {
    munmap(base, size);
    return filled.status();
  }
  (void)madvise(base, size, MADV_DONTDUMP);
  (void)madvise(base, size, MADV_NOHUGEPAGE);
  return std::unique_ptr<MappedClientMemory>(
      new MappedClientMemory(static_cast<uint8_t*>(base), size, *std::move(filled)));
}

MappedClientMemory::~MappedClientMemory() {
  filled_.reset();  // no longer watched before the unmap
  munmap(base_, size_);
}

}  // namespace acld::server
