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

}  // namespace

void StreamingCopy(void* dst, const void* src, size_t count) {
#if defined(__x86_64__)
  if (count >= kStreamingCopyMinBytes && count <= kStreamingCopyMaxBytes &&
      !Overlap(dst, src, count)) {
    auto* out = static_cast<uint8_t*>(dst);
    const auto* in = static_cast<const uint8_t*>(src);
    // Non-temporal stores need a 16-byte aligned destination: the head goes
    // the ordinary way, then 64 bytes (a cache line) per step, then the tail.
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(out) & 15)) & 15;
    std::memcpy(out, in, head);
    out += head;
    in += head;
    count -= head;
    for (size_t lines = count / 64; lines > 0; --lines, in += 64, out += 64) {
      // The loads run ahead of the stores (a prefetch cannot fault).
      _mm_prefetch(reinterpret_cast<const char*>(in) + 512, _MM_HINT_T0);
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
    }
    std::memcpy(out, in, count % 64);
    // Non-temporal stores are weakly ordered: whoever is told next that the
    // copy is done (another thread, the other process) must see the bytes.
    _mm_sfence();
    return;
  }
#endif
  std::memmove(dst, src, count);
}

}  // namespace acld
