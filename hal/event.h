// A device event: a point in a stream that other streams can wait for, with
// the device's timestamp of when the stream passed it.
#ifndef ACLD_HAL_EVENT_H_
#define ACLD_HAL_EVENT_H_

#include <cstdint>
#include <optional>

namespace hal {

class Event {
 public:
  virtual ~Event() = default;

  // The device clock (Device::NowNanos) when the last completed record ran;
  // nullopt before any record completed.
  virtual std::optional<int64_t> TimestampNanos() const = 0;
  // True when every record submitted so far has run.
  virtual bool Complete() const = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_EVENT_H_
