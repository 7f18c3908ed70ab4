#include "daemon/server/client_page_filler.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/memory_sealer.h"
#include "proto/acl/status_macros.h"

namespace acld::server {

struct FilledFromClient::Region {
  uintptr_t base = 0;
  uint64_t size = 0;
  // The client's /proc/<pid>/mem, shared with fills that still run and the
  // process's other regions.
  std::shared_ptr<const UniqueFd> client_memory;
  uint64_t client_address = 0;
  std::string sender;
  // Faults served: each chunk's, twice (two threads meeting it at once),
  // and a few more (a page the client itself punched out and wrote again);
  // beyond, the client keeps punching holes.
  uint64_t max_faults = 0;
  std::atomic<uint64_t> faults{0};
  std::atomic<uint64_t> fills{0};
  std::atomic<bool> given_up{false};
  std::function<void()> on_given_up;  // once, on the handler's thread
};

namespace {

using Region = FilledFromClient::Region;

// The largest memory map acld reads looking for a client's mapping: the
// kernel's default vm.max_map_count (65,530) of lines of about 100 bytes.
constexpr size_t kMaxMapsBytes = 16 << 20;
// Bytes read from the client at a time while filling (the filling thread's
// stack holds them).
constexpr size_t kReadBytes = 64 << 10;
// Faults beyond two per chunk before acld gives up on a client's memory.
constexpr uint64_t kSpareFaults = 32;

uintptr_t PageSize() { return static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)); }

// Calls `line` with each line of `fd` (read in pieces: acld never holds a
// whole memory map) until it returns true; false when none did.
absl::StatusOr<bool> FindLine(int fd, size_t limit, const std::function<bool(const char*)>& line) {
  std::string pending;
  char buffer[1 << 16];
  size_t total = 0;
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return absl::FailedPreconditionError(std::strerror(errno));
    if (got == 0) return pending.empty() ? false : line(pending.c_str());
    total += static_cast<size_t>(got);
    if (total > limit) {
      return absl::FailedPreconditionError(absl::StrCat("larger than ", limit, " bytes"));
    }
    for (const char* at = buffer; at < buffer + got;) {
      const char* end = static_cast<const char*>(std::memchr(at, '\n', buffer + got - at));
      if (end == nullptr) {
        pending.append(at, static_cast<size_t>(buffer + got - at));
        break;
      }
      pending.append(at, static_cast<size_t>(end - at));
      if (line(pending.c_str())) return true;
      pending.clear();
      at = end + 1;
    }
  }
}

// One userfaultfd for all of acld's mappings of older clients' memory, and
// the thread that serves its faults, one at a time: a fill waits kSealWait at
// most (RunForSender), so a client that makes its fills wait delays the
// others by that much a fill, until its slow fills add up to a refusal
// (kSlowBudget, memory_sealer.h).
class PageFiller {
 public:
  // Created on first use and never destroyed: its thread serves for ever.
  // A failure is not kept (it may have been for want of a thread).
  static absl::StatusOr<PageFiller*> Get() {
    static absl::Mutex mu;
    absl::MutexLock lock(&mu);
    if (PageFiller* filler = IfMade()) return filler;
    absl::StatusOr<PageFiller*> created = Create();
    if (created.ok()) Made().store(*created, std::memory_order_release);
    return created;
  }

  // The filler, if one was made (counting it must not make one).
  static PageFiller* IfMade() { return Made().load(std::memory_order_acquire); }

  // Regions watched and not given up.
  size_t filling() {
    absl::MutexLock lock(&mu_);
    return static_cast<size_t>(std::count_if(
        regions_.begin(), regions_.end(),
        [](const auto& entry) { return !entry.second->given_up.load(); }));
  }

  absl::Status Watch(const std::shared_ptr<Region>& region) {
    absl::MutexLock lock(&mu_);
    uffdio_register range{};
    range.range.start = region->base;
    range.range.len = region->size;
    range.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (ioctl(uffd_, UFFDIO_REGISTER, &range) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot watch the mapping for holes: ", std::strerror(errno)));
    }
    regions_[region->base] = region;
    return absl::OkStatus();
  }

  void Unwatch(const Region& region) {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(region.base);
    if (it == regions_.end() || it->second.get() != &region) return;
    regions_.erase(it);
    if (region.given_up.load()) return;  // acld's own memory now, or unwatched already
    uffdio_range range{region.base, region.size};
    (void)ioctl(uffd_, UFFDIO_UNREGISTER, &range);
  }

 private:
  explicit PageFiller(int uffd) : uffd_(uffd) {}

  static absl::StatusOr<PageFiller*> Create() {
    const int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
    if (uffd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("no userfaultfd (", std::strerror(errno), ")"));
    }
    uffdio_api api{};
    api.api = UFFD_API;
    if (ioctl(uffd, UFFDIO_API, &api) != 0 || (api.features & UFFD_FEATURE_MISSING_SHMEM) == 0) {
      close(uffd);
      return absl::FailedPreconditionError("this kernel's userfaultfd cannot watch shared memory");
    }
    auto* filler = new PageFiller(uffd);
    try {
      std::thread([filler] { filler->Serve(); }).detach();
    } catch (const std::system_error&) {
      delete filler;
      close(uffd);
      return absl::ResourceExhaustedError("no thread left to fill holes on");
    }
    return filler;
  }

  void Serve() {
    for (;;) {
      uffd_msg message{};
      const ssize_t got = read(uffd_, &message, sizeof(message));
      if (got != static_cast<ssize_t>(sizeof(message))) continue;  // EINTR
      if (message.event == UFFD_EVENT_PAGEFAULT) Fault(message.arg.pagefault.address);
    }
  }

  void Fault(uintptr_t address) {
    const uintptr_t page = address & ~(PageSize() - 1);
    std::shared_ptr<Region> region;
    {
      absl::MutexLock lock(&mu_);
      auto it = regions_.upper_bound(address);
      if (it != regions_.begin() && address - (--it)->first < it->second->size) {
        region = it->second;
      }
    }
    // Gone or given up: it finds what is mapped there now.
    if (region == nullptr || region->given_up.load()) {
      Wake(page, PageSize());
      return;
    }
    if (region->faults.fetch_add(1) >= region->max_faults) {
      GiveUp(region);
      return;
    }
    // Filled since the fault (another thread's in the same chunk, served
    // first): it finds the page.
    if (InPageCache(page)) {
      Wake(page, PageSize());
      return;
    }
    const uint64_t offset = (page - region->base) / kFillBytes * kFillBytes;
    const uint64_t bytes = std::min<uint64_t>(kFillBytes, region->size - offset);
    region->fills.fetch_add(1);
    // A fill that read something else (the client mapped other memory at
    // that address since) leaves the hole: given up at once, not met again.
    if (!Fill(*region, offset, bytes).ok() || !InPageCache(page)) {
      GiveUp(region);
      return;
    }
    Wake(region->base + offset, bytes);
  }

  // Reads [offset, offset + bytes) of the client's memory through its own
  // mapping: the kernel allocates the holes there, charged to the client.
  static absl::Status Fill(const Region& region, uint64_t offset, uint64_t bytes) {
    std::shared_ptr<const UniqueFd> memory = region.client_memory;
    const uint64_t address = region.client_address + offset;
    return RunForSender(region.sender, [memory, address, bytes] {
      char buffer[kReadBytes];
      for (uint64_t done = 0; done < bytes;) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBytes, bytes - done));
        const ssize_t got =
            pread(memory->get(), buffer, want, static_cast<off_t>(address + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          return absl::FailedPreconditionError("the client no longer maps its memory");
        }
        done += static_cast<uint64_t>(got);
      }
      return absl::OkStatus();
    });
  }

  // acld's mapping becomes memory of acld's own: the access under way ends
  // there, and the memory's owner refuses it from now on (on_given_up).
  void GiveUp(const std::shared_ptr<Region>& region) {
    bool now = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = regions_.find(region->base);
      // Unwatched meanwhile: its owner unmaps it (nothing faults there).
      if (it == regions_.end() || it->second != region) return;
      now = !region->given_up.exchange(true);
      if (now && !ReplaceWithOwnMemory(*region)) {
        // No mapping for it (the host is out of them): the access under way
        // faults as before protocol 5 rather than waits for ever; the memory
        // is refused from now on.
        uffdio_range range{region->base, region->size};
        (void)ioctl(uffd_, UFFDIO_UNREGISTER, &range);
      }
    }
    Wake(region->base, region->size);
    if (now && region->on_given_up) region->on_given_up();
  }

  // Maps memory of acld's own over the region: pages only where the access
  // under way writes, dropped with the mapping, which no client reaches. A
  // sparse memfd first: unlike private anonymous memory, it takes no commit
  // charge that could fail after the old mapping is gone
  // (vm.overcommit_memory=2); anonymous memory if acld cannot make one.
  static bool ReplaceWithOwnMemory(const Region& region) {
    void* const at = reinterpret_cast<void*>(region.base);
    void* replaced = MAP_FAILED;
    const int own = memfd_create("acld-given-up", MFD_CLOEXEC);
    if (own >= 0) {
      if (ftruncate(own, static_cast<off_t>(region.size)) == 0) {
        replaced = mmap(at, region.size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, own, 0);
      }
      close(own);  // the mapping keeps it
    }
    if (replaced == MAP_FAILED) {
      replaced = mmap(at, region.size, PROT_READ | PROT_WRITE,
                      MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    if (replaced == MAP_FAILED) return false;
    (void)madvise(replaced, region.size, MADV_DONTDUMP);    // a client's bytes, still
    (void)madvise(replaced, region.size, MADV_NOHUGEPAGE);  // no huge page acld pays for
    return true;
  }

  // Whether the file's page under acld's `page` exists (mincore() reads the
  // page cache for a shared file mapping, faulting nothing in).
  static bool InPageCache(uintptr_t page) {
    unsigned char present = 0;
    return mincore(reinterpret_cast<void*>(page), PageSize(), &present) == 0 && (present & 1);
  }

  void Wake(uintptr_t start, uint64_t bytes) {
    uffdio_range range{start, bytes};
    (void)ioctl(uffd_, UFFDIO_WAKE, &range);
  }

  static std::atomic<PageFiller*>& Made() {
    static std::atomic<PageFiller*> filler{nullptr};
    return filler;
  }

  const int uffd_;
  absl::Mutex mu_;
  std::map<uintptr_t, std::shared_ptr<Region>> regions_ ABSL_GUARDED_BY(mu_);  // by base
};

// Each client process's /proc/<pid>/mem, opened once for all its regions:
// one descriptor per process, not per segment.
class ClientMemories {
 public:
  // The memory of process `pid` (started at `start_ticks`; `process` is
  // "/proc/<pid>") that reads at `address`: the one its regions hold, unless
  // that one no longer reads there (the process exec()ed since: its old
  // memory map is gone), or opened now. The open and the reads wait for the
  // process: no lock is held meanwhile.
  absl::StatusOr<std::shared_ptr<const UniqueFd>> Of(pid_t pid, uint64_t start_ticks,
                                                     const std::string& process,
                                                     uint64_t address) {
    const std::pair<pid_t, uint64_t> key{pid, start_ticks};
    std::shared_ptr<const UniqueFd> held;
    {
      absl::MutexLock lock(&mu_);
      for (auto it = open_.begin(); it != open_.end();) {
        it = it->second.expired() ? open_.erase(it) : std::next(it);
      }
      auto it = open_.find(key);
      if (it != open_.end()) held = it->second.lock();
    }
    if (held != nullptr && ReadsAt(*held, address)) return held;
    auto memory = std::make_shared<const UniqueFd>(
        open((process + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
    if (!memory->valid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "acld cannot read the memory of the process that handed it over (",
          std::strerror(errno), ")"));
    }
    // Opened before this look: if the process is still the one that
    // connected, what was opened is its memory (kept for its next regions).
    if (ProcessStartTicks(pid) != start_ticks) {
      return absl::FailedPreconditionError("the process that handed it over is gone");
    }
    if (!ReadsAt(*memory, address)) {
      return absl::FailedPreconditionError(
          "acld cannot read the memory of the process that handed it over");
    }
    absl::MutexLock lock(&mu_);
    open_[key] = memory;
    return memory;
  }

  // Processes whose memory a region holds open now.
  size_t processes() {
    absl::MutexLock lock(&mu_);
    return static_cast<size_t>(std::count_if(open_.begin(), open_.end(), [](const auto& entry) {
      return !entry.second.expired();
    }));
  }

 private:
  static bool ReadsAt(const UniqueFd& memory, uint64_t address) {
    char byte;
    return pread(memory.get(), &byte, 1, static_cast<off_t>(address)) == 1;
  }

  absl::Mutex mu_;
  std::map<std::pair<pid_t, uint64_t>, std::weak_ptr<const UniqueFd>> open_ ABSL_GUARDED_BY(mu_);
};

ClientMemories& TheClientMemories() {
  static auto* memories = new ClientMemories;  // regions may outlive any owner
  return *memories;
}

}  // namespace

FillingCounts CountFilling() {
  FillingCounts counts;
  if (PageFiller* filler = PageFiller::IfMade()) {
    counts.regions = static_cast<uint32_t>(filler->filling());
  }
  counts.client_memories = static_cast<uint32_t>(TheClientMemories().processes());
  return counts;
}

absl::StatusOr<ClientMapping> FindClientMapping(pid_t pid, uint64_t start_ticks, int fd,
                                                uint64_t size) {
  // Without its start time acld cannot tell the process from one that took
  // its pid later.
  if (start_ticks == 0) {
    return absl::FailedPreconditionError("acld does not know when the process that handed it "
                                         "over started");
  }
  struct stat file {};
  if (fstat(fd, &file) != 0) return absl::InvalidArgumentError(std::strerror(errno));
  const std::string process = absl::StrCat("/proc/", pid);
  UniqueFd maps(open((process + "/maps").c_str(), O_RDONLY | O_CLOEXEC));
  if (!maps.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "acld cannot read the memory map of the process that handed it over (",
        std::strerror(errno), ")"));
  }
  uint64_t address = 0;
  absl::StatusOr<bool> found = FindLine(maps.get(), kMaxMapsBytes, [&](const char* line) {
    unsigned long start = 0, end = 0, offset = 0, inode = 0;  // NOLINT(runtime/int): sscanf's
    unsigned int major_number = 0, minor_number = 0;
    char permissions[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &start, &end, permissions, &offset,
                    &major_number, &minor_number, &inode) != 7) {
      return false;
    }
    address = start;
    return permissions[0] == 'r' && permissions[3] == 's' && offset == 0 &&
           major_number == major(file.st_dev) && minor_number == minor(file.st_dev) &&
           inode == file.st_ino && end > start && end - start >= size;
  });
  if (!found.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot read the memory map of the process that handed it over: ",
        found.status().message()));
  }
  if (!*found) {
    return absl::FailedPreconditionError(
        "the process that handed it over does not map it whole (acld fills its holes from there)");
  }
  absl::StatusOr<std::shared_ptr<const UniqueFd>> memory =
      TheClientMemories().Of(pid, start_ticks, process, address);
  if (!memory.ok()) return memory.status();
  // The memory map was opened before this look: if the process is still the
  // one that connected, what was read is its map.
  if (ProcessStartTicks(pid) != start_ticks) {
    return absl::FailedPreconditionError("the process that handed it over is gone");
  }
  return ClientMapping{*std::move(memory), address};
}

FilledFromClient::~FilledFromClient() {
  absl::StatusOr<PageFiller*> filler = PageFiller::Get();
  if (filler.ok()) (*filler)->Unwatch(*region_);
}

bool FilledFromClient::given_up() const { return region_->given_up.load(); }

uint64_t FilledFromClient::fills() const { return region_->fills.load(); }

absl::Status CanFillFromClients() { return PageFiller::Get().status(); }

absl::StatusOr<std::unique_ptr<FilledFromClient>> FillFromClient(
    void* base, uint64_t size, ClientMapping client, std::string sender,
    std::function<void()> on_given_up) {
  ACL_ASSIGN_OR_RETURN(PageFiller * filler, PageFiller::Get());
  auto region = std::make_shared<Region>();
  region->base = reinterpret_cast<uintptr_t>(base);
  // As mmap() mapped it: whole pages (a userfaultfd watches nothing less).
  region->size = (size + PageSize() - 1) / PageSize() * PageSize();
  region->client_memory = std::move(client.memory);
  region->client_address = client.address;
  region->sender = std::move(sender);
  region->on_given_up = std::move(on_given_up);
  region->max_faults = 2 * ((region->size + kFillBytes - 1) / kFillBytes) + kSpareFaults;
  ACL_RETURN_IF_ERROR(filler->Watch(region));
  return std::unique_ptr<FilledFromClient>(new FilledFromClient(std::move(region)));
}

}  // namespace acld::server
