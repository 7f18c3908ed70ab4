#include "proto/acl/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace acld {
namespace {

bool Overlap(const void* dst, const void* src, size_t count) {
  const auto d = reinterpret_cast<uintptr_t>(dst);
  const auto s = reinterpret_cast<uintptr_t>(src);
  return d < s + count && s < d + count;
}

#if defined(__x86_64__)
constexpr size_t kLine = 64;

// The bulk of a large copy goes kStreams pages at a time, a line of each in
// turn: one sequential stream leaves memory waiting on one prefetcher and one
// open page, several keep more reads in flight. With stores that skip the
// caches, one stream ran at 78-87 % of glibc's memcpy of 256 MiB, four at
// 101-112 %, eight at 105-115 % (docs/performance.md, "Copies that read
// several pages at once").
constexpr size_t kStreams = 8;
constexpr size_t kStride = 4096;

enum class Stores { kPastTheCaches, kIntoTheCaches };

// One cache line, loaded ahead of its stores (a prefetch cannot fault).
template <Stores kStores>
inline void CopyLine(uint8_t* out, const uint8_t* in) {
  _mm_prefetch(reinterpret_cast<const char*>(in) + 256, _MM_HINT_T0);
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
  if constexpr (kStores == Stores::kPastTheCaches) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
  } else {
    _mm_store_si128(reinterpret_cast<__m128i*>(out), a);
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 16), b);
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 32), c);
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 48), d);
  }
}

// Copies with the given stores; false (nothing copied) when the copy is
// outside [min_bytes, kCopyByLinesMaxBytes] or overlaps.
template <Stores kStores>
bool CopyByLines(void* dst, const void* src, size_t count, size_t min_bytes) {
  if (count < min_bytes || count > kCopyByLinesMaxBytes || Overlap(dst, src, count)) {
    return false;
  }
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  // Each step fills one whole destination line: a line left partly written
  // while the other streams write theirs is flushed in pieces by
  // non-temporal stores, each a read-modify-write of memory (5 times slower).
  // So the head goes the ordinary way up to a line boundary, then whole
  // lines (the body), then the tail.
  const size_t head = (kLine - (reinterpret_cast<uintptr_t>(out) & (kLine - 1))) & (kLine - 1);
  std::memcpy(out, in, head);
  out += head;
  in += head;
  count -= head;
  for (; count >= kStreams * kStride; count -= kStreams * kStride) {
    for (size_t line = 0; line < kStride; line += kLine) {
      for (size_t stream = 0; stream < kStreams; ++stream) {
        CopyLine<kStores>(out + stream * kStride + line, in + stream * kStride + line);
      }
    }
    out += kStreams * kStride;
    in += kStreams * kStride;
  }
  for (; count >= kLine; count -= kLine, out += kLine, in += kLine) CopyLine<kStores>(out, in);
  std::memcpy(out, in, count);
  // Non-temporal stores are weakly ordered: whoever is told next that the
  // copy is done (another thread, the other process) must see the bytes.
  if constexpr (kStores == Stores::kPastTheCaches) _mm_sfence();
  return true;
}
#endif

}  // namespace

void StreamingCopy(void* dst, const void* src, size_t count) {
  if (count == 0) return;  // either may be null then, which memmove does not allow
#if defined(__x86_64__)
  if (CopyByLines<Stores::kPastTheCaches>(dst, src, count, kStreamingCopyMinBytes)) return;
#endif
  std::memmove(dst, src, count);
}

void CopyForTheReader(void* dst, const void* src, size_t count) {
  if (count == 0) return;  // as above
#if defined(__x86_64__)
  if (CopyByLines<Stores::kIntoTheCaches>(dst, src, count, kReaderCopyByLinesMinBytes)) return;
#endif
  std::memmove(dst, src, count);
}

}  // namespace acld
