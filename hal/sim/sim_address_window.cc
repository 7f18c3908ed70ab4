#include "hal/sim/sim_address_window.h"

#include <iterator>
#include <limits>

namespace hal::sim {
namespace {

// `start` rounded up to `alignment`, or nullopt past 2^64.
std::optional<uint64_t> AlignUp(uint64_t start, uint64_t alignment) {
  const uint64_t up = (alignment - start % alignment) % alignment;
  if (start > std::numeric_limits<uint64_t>::max() - up) return std::nullopt;
  return start + up;
}

}  // namespace

SimAddressWindow::SimAddressWindow(uint64_t begin, uint64_t end) {
  if (begin < end) Insert(begin, end - begin);
}

std::optional<uint64_t> SimAddressWindow::Take(uint64_t size, uint64_t alignment) {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  // Does the free range (size, start) hold `size` bytes at `alignment`?
  auto fits = [&](const std::pair<uint64_t, uint64_t>& range) -> std::optional<uint64_t> {
    const std::optional<uint64_t> aligned = AlignUp(range.second, alignment);
    if (!aligned.has_value() || *aligned - range.second > range.first - size) return std::nullopt;
    return aligned;
  };
  std::optional<uint64_t> start;
  auto candidate = by_size_.lower_bound({size, 0});
  for (int tried = 0; candidate != by_size_.end() && tried < kCandidates; ++candidate, ++tried) {
    if ((start = fits(*candidate))) break;
  }
  if (!start.has_value() && candidate != by_size_.end()) {
    // Every range of at least size + alignment - 1 bytes holds it aligned.
    if (alignment - 1 > std::numeric_limits<uint64_t>::max() - size) return std::nullopt;
    candidate = by_size_.lower_bound({size + alignment - 1, 0});
    if (candidate != by_size_.end()) start = fits(*candidate);
  }
  if (!start.has_value()) return std::nullopt;
  const uint64_t range_start = candidate->second, range_size = candidate->first;
  Erase(by_start_.find(range_start));
  if (*start > range_start) Insert(range_start, *start - range_start);
  const uint64_t taken_end = *start + size, range_end = range_start + range_size;
  if (taken_end < range_end) Insert(taken_end, range_end - taken_end);
  return start;
}

void SimAddressWindow::Give(uint64_t start, uint64_t size) {
  if (size == 0 || start > std::numeric_limits<uint64_t>::max() - size) return;
  uint64_t end = start + size;
  auto next = by_start_.lower_bound(start);
  if (next != by_start_.end() && next->first < end) return;  // overlaps a free range
  if (next != by_start_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second > start) return;  // overlaps a free range
    if (previous->first + previous->second == start) {
      start = previous->first;
      Erase(previous);
    }
  }
  if (next != by_start_.end() && next->first == end) {
    end += next->second;
    Erase(next);
  }
  Insert(start, end - start);
}

void SimAddressWindow::Insert(uint64_t start, uint64_t size) {
  by_start_.emplace(start, size);
  by_size_.emplace(size, start);
}

void SimAddressWindow::Erase(std::map<uint64_t, uint64_t>::iterator range) {
  by_size_.erase({range->second, range->first});
  by_start_.erase(range);
}

}  // namespace hal::sim
