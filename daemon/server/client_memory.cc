#include "daemon/server/client_memory.h"

#include <fcntl.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace acld::server {

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

}  // namespace acld::server
