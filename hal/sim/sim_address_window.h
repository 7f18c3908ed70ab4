// The addresses of one sim device: allocations and address reservations take
// ranges from it, and give them back when the memory behind them is released
// (after the last task pinning it). A freed range is taken again, so
// allocating and freeing in a loop never uses up the window: one tenant could
// otherwise leave every tenant's aclrtMalloc failing until acld restarts.
// Reuse is safe because nothing outside a live allocation is reachable: every
// device access is resolved against the caller's own live allocations
// (daemon/core/memory_manager.h), and fresh memory is zeroed.
#ifndef ACLD_HAL_SIM_SIM_ADDRESS_WINDOW_H_
#define ACLD_HAL_SIM_SIM_ADDRESS_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace hal::sim {

class SimAddressWindow {
 public:
  // Offsets [begin, end) are free.
  SimAddressWindow(uint64_t begin, uint64_t end);

  // The start of `size` free bytes (size > 0) aligned to `alignment` (a power
  // of two), now taken: the smallest free range that holds them, among the
  // first kCandidates that could; nullopt when no free range holds them.
  std::optional<uint64_t> Take(uint64_t size, uint64_t alignment);
  // Gives back what Take returned (any part of it, once). A range that
  // overlaps a free one is ignored: given twice, it would be taken twice.
  void Give(uint64_t start, uint64_t size);

  // Free ranges now (at most one more than the ranges taken).
  size_t free_ranges() const { return by_start_.size(); }

 private:
  // Free ranges too small once aligned are skipped; past this many, the
  // smallest range that holds `size` at any alignment is taken.
  static constexpr int kCandidates = 64;

  void Insert(uint64_t start, uint64_t size);
  void Erase(std::map<uint64_t, uint64_t>::iterator range);

  std::map<uint64_t, uint64_t> by_start_;           // start -> size; never adjacent
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (size, start)
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_ADDRESS_WINDOW_H_
