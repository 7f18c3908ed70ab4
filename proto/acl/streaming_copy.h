// The copies of a bulk copy's chunks, both read eight pages at a time
// (docs/performance.md, "Copies that read several pages at once"):
//  - StreamingCopy, for a destination that will not be read again soon: the
//    far end of a bulk copy (device memory written from the staging segment,
//    or the application's buffer written from it);
//  - CopyForTheReader, for a destination read next (a staging slot).
//
// A plain memcpy of a 4 MiB chunk stores through the caches: each
// destination line is first read from memory (read for ownership), then
// written back when evicted, and it pushes the staging segment out of the
// caches that both sides of a staged copy share. Non-temporal stores write
// the destination straight to memory. glibc's memcpy does the same on its
// own only above a threshold derived from the cache size (hundreds of MiB on
// hosts with large shared caches), so a chunked copy never gets it. Measured
// in docs/performance.md, "Pageable copies: stores that skip the caches".
#ifndef ACLD_PROTO_ACL_STREAMING_COPY_H_
#define ACLD_PROTO_ACL_STREAMING_COPY_H_

#include <cstddef>

namespace acld {

// Below this, a copy's destination is likely to stay in the caches anyway,
// and a plain memcpy is as fast.
inline constexpr size_t kStreamingCopyMinBytes = 256 << 10;
// Above this, both are memmove: they are meant for a bulk copy's chunks
// (4 MiB), and glibc's memcpy goes past the caches on its own from its
// threshold up (99 MiB on the development VM).
inline constexpr size_t kCopyByLinesMaxBytes = 16 << 20;

// Copies `count` bytes from `src` to `dst` (which may overlap, as in
// memmove); with non-temporal stores when they do not overlap, `count` is
// within [kStreamingCopyMinBytes, kCopyByLinesMaxBytes] and the CPU has
// them (x86-64 always does).
void StreamingCopy(void* dst, const void* src, size_t count);

// The same copy with ordinary stores, for a destination that is read next (a
// staging slot the other side copies out of at once): it stays in the
// caches, while the source is still read several pages at once, when
// `count` is within [kReaderCopyByLinesMinBytes, kCopyByLinesMaxBytes].
// Below, memmove: a smaller source may still sit in this core's own cache
// (2 MiB here), where glibc's wider copy is faster (by lines was 73-78 % of
// it at 1 MiB, 99 % at 2 MiB).
inline constexpr size_t kReaderCopyByLinesMinBytes = 2 << 20;
void CopyForTheReader(void* dst, const void* src, size_t count);

}  // namespace acld

#endif  // ACLD_PROTO_ACL_STREAMING_COPY_H_
