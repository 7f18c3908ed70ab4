#include "hal/settled_records.h"

#include <iterator>

namespace hal {

bool SettledRecords::Contains(uint64_t record) const {
  if (record <= through_) return true;
  auto after = runs_.upper_bound(record);
  if (after == runs_.begin()) return false;
  return std::prev(after)->second >= record;
}

bool SettledRecords::Add(uint64_t record) {
  if (Contains(record)) return false;
  // Joins the run that ends just below it and the one that starts just above.
  uint64_t first = record;
  uint64_t last = record;
  auto above = runs_.find(record + 1);
  if (above != runs_.end()) {
    last = above->second;
    runs_.erase(above);
  }
  auto below = runs_.lower_bound(record);
  if (below != runs_.begin() && std::prev(below)->second + 1 == record) {
    --below;
    first = below->first;
  }
  if (first == through_ + 1) {
    through_ = last;
    runs_.erase(first);
  } else {
    runs_[first] = last;
  }
  return true;
}

}  // namespace hal
