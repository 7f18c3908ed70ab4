// Which of an event's records have settled, when they settle in any order:
// every record through a mark, and above it runs of settled records (first
// -> last), one per gap below them, each gap a record not settled yet.
// Records kept one at a time would grow without bound behind one record that
// never settles (a record held behind a wait that never ends, while the
// client records the event again and again on another stream); runs grow
// only with the records still unsettled, each a queued task.
//
// Not synchronized: its owner's lock guards it.
#ifndef ACLD_HAL_SETTLED_RECORDS_H_
#define ACLD_HAL_SETTLED_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <map>

namespace hal {

class SettledRecords {
 public:
  // Record 0 (none) counts as settled.
  bool Contains(uint64_t record) const;
  // Marks `record` settled; false when it was already.
  bool Add(uint64_t record);
  // Every record up to this one has settled.
  uint64_t through() const { return through_; }
  // Runs kept above through() (for tests).
  size_t runs() const { return runs_.size(); }

 private:
  uint64_t through_ = 0;
  std::map<uint64_t, uint64_t> runs_;  // first -> last, all above through_ + 1
};

}  // namespace hal

#endif  // ACLD_HAL_SETTLED_RECORDS_H_
