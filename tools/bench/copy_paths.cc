// What this machine allows a bulk host copy between two processes, without
// acld: the kernel's single-copy paths and the ideal of the staged copy that
// acld's pageable copies use, each beside a memcpy of the same run. It says
// how close a staged copy can come to memcpy here (docs/performance.md,
// "256 MiB pageable copies: what this VM allows").
//
//   copy_paths [MIB]     (default 256)
//
// Every path moves MIB MiB from one buffer (faulted in) to another, in
// 4 MiB pieces unless it says otherwise, median of 5:
//   process_vm_readv     one call per piece (what a daemon reading the
//                        client's pages would do)
//   /proc/self/mem       pread per piece (a descriptor a client could hand over)
//   vmsplice + read      the source's pages spliced into a 1 MiB pipe, read
//                        out by a second thread (zero-copy in, one copy out)
//   staged, 2 threads    8 slots of 512 KiB, as acld's staging segment: one
//                        thread copies in (acld::CopyForTheReader), the
//                        other out with stores that skip the caches
//                        (acld::StreamingCopy), both spinning, never sleeping
//   pieces: memcpy, pieces: StreamingCopy, pieces: CopyForTheReader
//                        one thread, each 4 MiB piece copied by that function
//                        (what each side of a staged copy and the sim's copy
//                        engine do; docs/performance.md, "Copies that read
//                        several pages at once")
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "proto/acl/streaming_copy.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPiece = 4 << 20;
constexpr size_t kPipeBytes = 1 << 20;
// The staging segment of a pageable copy (client/bulk_copies.cc).
constexpr size_t kStagedChunk = 512 << 10;
constexpr size_t kStagedSlots = 8;

// Seconds per run, median of 5 (one warm-up run first). False from `run`
// stops the measurement.
template <typename Run>
double MedianSeconds(Run run) {
  if (!run()) return -1;
  std::vector<double> seconds;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    if (!run()) return -1;
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[2];
}

bool ProcessVmReadv(char* dst, const char* src, size_t bytes) {
  for (size_t offset = 0; offset < bytes; offset += kPiece) {
    const size_t n = std::min(kPiece, bytes - offset);
    iovec local{dst + offset, n};
    iovec remote{const_cast<char*>(src) + offset, n};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n)) {
      return false;
    }
  }
  return true;
}

bool ProcMem(int mem, char* dst, const char* src, size_t bytes) {
  for (size_t offset = 0; offset < bytes; offset += kPiece) {
    const size_t n = std::min(kPiece, bytes - offset);
    const auto at = static_cast<off_t>(reinterpret_cast<uintptr_t>(src + offset));
    if (pread(mem, dst + offset, n, at) != static_cast<ssize_t>(n)) return false;
  }
  return true;
}

bool SpliceThrough(char* dst, const char* src, size_t bytes) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return false;
  fcntl(pipe_fds[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  std::atomic<bool> read_ok{true};
  std::thread reader([&] {
    for (size_t got = 0; got < bytes;) {
      const ssize_t n = read(pipe_fds[0], dst + got, std::min(kPipeBytes, bytes - got));
      if (n <= 0) {
        read_ok = false;
        return;
      }
      got += static_cast<size_t>(n);
    }
  });
  bool ok = true;
  for (size_t sent = 0; ok && sent < bytes;) {
    iovec piece{const_cast<char*>(src) + sent, std::min(kPipeBytes, bytes - sent)};
    const ssize_t n = vmsplice(pipe_fds[1], &piece, 1, 0);
    ok = n > 0;
    if (ok) sent += static_cast<size_t>(n);
  }
  close(pipe_fds[1]);  // a reader still waiting sees the end
  reader.join();
  close(pipe_fds[0]);
  return ok && read_ok;
}

bool Staged(char* dst, const char* src, size_t bytes, char* staging) {
  const size_t pieces = (bytes + kStagedChunk - 1) / kStagedChunk;
  std::atomic<size_t> filled{0}, emptied{0};
  std::thread consumer([&] {
    for (size_t k = 0; k < pieces; ++k) {
      while (filled.load(std::memory_order_acquire) <= k) {
      }
      const size_t n = std::min(kStagedChunk, bytes - k * kStagedChunk);
      acld::StreamingCopy(dst + k * kStagedChunk, staging + (k % kStagedSlots) * kStagedChunk, n);
      emptied.store(k + 1, std::memory_order_release);
    }
  });
  for (size_t k = 0; k < pieces; ++k) {
    while (k - emptied.load(std::memory_order_acquire) >= kStagedSlots) {
    }
    const size_t n = std::min(kStagedChunk, bytes - k * kStagedChunk);
    acld::CopyForTheReader(staging + (k % kStagedSlots) * kStagedChunk, src + k * kStagedChunk, n);
    filled.store(k + 1, std::memory_order_release);
  }
  consumer.join();
  return true;
}

// Copies `bytes` in pieces, each with `copy`.
bool InPieces(void (*copy)(void*, const void*, size_t), char* dst, const char* src,
              size_t bytes) {
  for (size_t offset = 0; offset < bytes; offset += kPiece) {
    copy(dst + offset, src + offset, std::min(kPiece, bytes - offset));
  }
  return true;
}

void Memcpy(void* dst, const void* src, size_t count) { std::memcpy(dst, src, count); }

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  if (mib == 0 || mib > 4096) {
    std::fprintf(stderr, "usage: copy_paths [MIB], 1 to 4096\n");
    return 2;
  }
  const size_t bytes = mib << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 2), staging(kStagedSlots * kStagedChunk, 0);
  const int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  const double memcpy_s = MedianSeconds([&] {
    std::memcpy(dst.data(), src.data(), bytes);
    return true;
  });
  std::printf("copy paths, %zu MiB: memcpy %.2f GB/s\n", mib, bytes / memcpy_s / 1e9);
  // Times `run`, then checks that one more run copies every byte.
  auto measure = [&](const char* name, auto run) {
    const double seconds = MedianSeconds(run);
    if (seconds < 0) {
      std::printf("  %-26s failed: %s\n", name, std::strerror(errno));
      return true;
    }
    std::memset(dst.data(), 0, bytes);
    if (!run() || std::memcmp(dst.data(), src.data(), bytes) != 0) {
      std::fprintf(stderr, "copy_paths: %s did not copy what its source holds\n", name);
      return false;
    }
    std::printf("  %-26s %.2f GB/s (%.0f%% of memcpy)\n", name, bytes / seconds / 1e9,
                100 * memcpy_s / seconds);
    return true;
  };
  bool ok = measure("process_vm_readv",
                    [&] { return ProcessVmReadv(dst.data(), src.data(), bytes); });
  if (mem >= 0) {
    ok &= measure("/proc/self/mem", [&] { return ProcMem(mem, dst.data(), src.data(), bytes); });
    close(mem);
  } else {
    std::printf("  %-26s unavailable: %s\n", "/proc/self/mem", std::strerror(errno));
  }
  ok &= measure("vmsplice + read",
                [&] { return SpliceThrough(dst.data(), src.data(), bytes); });
  ok &= measure("staged, 2 threads",
                [&] { return Staged(dst.data(), src.data(), bytes, staging.data()); });
  ok &= measure("pieces: memcpy", [&] { return InPieces(Memcpy, dst.data(), src.data(), bytes); });
  ok &= measure("pieces: StreamingCopy",
                [&] { return InPieces(acld::StreamingCopy, dst.data(), src.data(), bytes); });
  ok &= measure("pieces: CopyForTheReader",
                [&] { return InPieces(acld::CopyForTheReader, dst.data(), src.data(), bytes); });
  return ok ? 0 : 1;
}
