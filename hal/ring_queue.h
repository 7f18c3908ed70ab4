// A FIFO that reuses its storage: after it has grown to the number of items
// in flight, pushing and popping allocate nothing (std::deque frees and
// allocates blocks as items pass through), and an empty one holds no memory
// (std::deque allocates a block when it is created: thousands of idle streams
// would pay for it). Streams keep their in-flight items in one, which is what
// "nothing per item is allocated" (hal/stream.h) asks. Once drained, a queue
// that grew past kKeptSlots gives its storage back: a burst of launches must
// not leave every stream holding the burst's peak until it is destroyed.
#ifndef ACLD_HAL_RING_QUEUE_H_
#define ACLD_HAL_RING_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace hal {

template <typename T>
class RingQueue {
 public:
  // Storage a drained queue keeps (steady traffic reuses it).
  static constexpr size_t kKeptSlots = 64;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return slots_[(head_ + size_ - 1) % slots_.size()]; }
  // The item `index` places after the front.
  T& at(size_t index) { return slots_[(head_ + index) % slots_.size()]; }

  void push_back(T item) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) % slots_.size()] = std::move(item);
    ++size_;
  }
  // Puts an item back in front of the others.
  void push_front(T item) {
    if (size_ == slots_.size()) Grow();
    head_ = (head_ + slots_.size() - 1) % slots_.size();
    slots_[head_] = std::move(item);
    ++size_;
  }
  // The front item, moved out.
  T pop_front() {
    T item = std::move(slots_[head_]);
    slots_[head_] = T();
    head_ = (head_ + 1) % slots_.size();
    --size_;
    ReleaseIfDrained();
    return item;
  }
  T pop_back() {
    T& slot = back();
    T item = std::move(slot);
    slot = T();
    --size_;
    ReleaseIfDrained();
    return item;
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i) at(i) = T();
    size_ = 0;
    ReleaseIfDrained();
  }
  size_t capacity() const { return slots_.size(); }
  // Room for `count` items in all, made at once (a batch about to be pushed
  // would otherwise grow the storage several times).
  void reserve(size_t count) {
    if (count > slots_.size()) Grow(count);
  }

 private:
  void Grow(size_t at_least = 0) {
    std::vector<T> larger(std::max(at_least, slots_.empty() ? size_t{4} : slots_.size() * 2));
    for (size_t i = 0; i < size_; ++i) larger[i] = std::move(at(i));
    slots_ = std::move(larger);
    head_ = 0;
  }
  void ReleaseIfDrained() {
    if (size_ == 0 && slots_.size() > kKeptSlots) std::vector<T>().swap(slots_);
    if (size_ == 0) head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_RING_QUEUE_H_
