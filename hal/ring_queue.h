// A FIFO that reuses its storage: after it has grown to the number of items
// in flight, pushing and popping allocate nothing (std::deque frees and
// allocates blocks as items pass through), and an empty one holds no memory
// (std::deque allocates a block when it is created: thousands of idle streams
// would pay for it). Streams keep their in-flight items in one, which is what
// "nothing per item is allocated" (hal/stream.h) asks. Once drained, a queue
// that grew past kKeptSlots gives its storage back: a burst of launches must
// not leave every stream holding the burst's peak until it is destroyed.
// A queue that drains between batches of a steady stream of work would then
// allocate (and fault in) its storage again for every batch; its owner may
// keep the storage when it drains (Drained::kKeep) and give it back itself
// once the queue has stayed empty (ReleaseStorage).
#ifndef ACLD_HAL_RING_QUEUE_H_
#define ACLD_HAL_RING_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace hal {

template <typename T>
class RingQueue {
 public:
  // Storage a drained queue keeps (steady traffic reuses it).
  static constexpr size_t kKeptSlots = 64;

  enum class Drained { kRelease, kKeep };

  explicit RingQueue(Drained drained = Drained::kRelease) : drained_(drained) {}
  RingQueue(RingQueue&& other) noexcept { Swap(other); }
  RingQueue& operator=(RingQueue&& other) noexcept {
    if (this != &other) {
      DestroyAll();
      Swap(other);
    }
    return *this;
  }
  RingQueue(const RingQueue&) = delete;
  RingQueue& operator=(const RingQueue&) = delete;
  ~RingQueue() { DestroyAll(); }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  T& front() { return *Slot(head_); }
  const T& front() const { return *Slot(head_); }
  T& back() { return *Slot((head_ + size_ - 1) % capacity_); }
  // The item `index` places after the front.
  T& at(size_t index) { return *Slot((head_ + index) % capacity_); }

  void push_back(T item) {
    if (size_ == capacity_) Grow();
    new (Slot((head_ + size_) % capacity_)) T(std::move(item));
    ++size_;
  }
  // Puts an item back in front of the others.
  void push_front(T item) {
    if (size_ == capacity_) Grow();
    const size_t head = (head_ + capacity_ - 1) % capacity_;
    new (Slot(head)) T(std::move(item));
    head_ = head;
    ++size_;
  }
  // The front item, moved out.
  T pop_front() {
    T* slot = Slot(head_);
    T item = std::move(*slot);
    slot->~T();
    head_ = (head_ + 1) % capacity_;
    --size_;
    ReleaseIfDrained();
    return item;
  }
  T pop_back() {
    T* slot = &back();
    T item = std::move(*slot);
    slot->~T();
    --size_;
    ReleaseIfDrained();
    return item;
  }
  void clear() {
    DestroyItems();
    ReleaseIfDrained();
  }
  size_t capacity() const { return capacity_; }
  // Empty, with more storage than a drained queue keeps on its own.
  bool holds_spare_storage() const { return size_ == 0 && capacity_ > kKeptSlots; }
  // Gives the storage of an empty queue back (a kKeep queue's owner does).
  void ReleaseStorage() {
    if (size_ == 0) DestroyAll();
  }
  // Room for `count` items in all, made at once (a batch about to be pushed
  // would otherwise grow the storage several times). It grows as a push
  // does, to at least twice its size: batch after batch each reserving just
  // what it adds would move the whole queue every time.
  void reserve(size_t count) {
    if (count > capacity_) Grow(count);
  }

 private:
  // Raw slots: an item is constructed when pushed and destroyed when
  // popped, so growing touches only the items there are (constructing a
  // whole array of empty items first cost more than the items' moves).
  struct alignas(T) RawSlot {
    unsigned char bytes[sizeof(T)];
  };

  T* Slot(size_t index) { return std::launder(reinterpret_cast<T*>(&slots_[index])); }
  const T* Slot(size_t index) const {
    return std::launder(reinterpret_cast<const T*>(&slots_[index]));
  }

  void Grow(size_t at_least = 0) {
    const size_t capacity = std::max({at_least, size_t{4}, capacity_ * 2});
    std::unique_ptr<RawSlot[]> larger(new RawSlot[capacity]);
    for (size_t i = 0; i < size_; ++i) {
      T* item = &at(i);
      new (&larger[i]) T(std::move(*item));
      item->~T();
    }
    slots_ = std::move(larger);
    capacity_ = capacity;
    head_ = 0;
  }
  void DestroyItems() {
    for (size_t i = 0; i < size_; ++i) at(i).~T();
    size_ = 0;
  }
  void DestroyAll() {
    DestroyItems();
    slots_.reset();
    capacity_ = 0;
    head_ = 0;
  }
  void ReleaseIfDrained() {
    if (size_ != 0) return;
    head_ = 0;
    if (capacity_ > kKeptSlots && drained_ == Drained::kRelease) DestroyAll();
  }
  // The policy stays with each queue; only the contents move.
  void Swap(RingQueue& other) noexcept {
    std::swap(slots_, other.slots_);
    std::swap(capacity_, other.capacity_);
    std::swap(head_, other.head_);
    std::swap(size_, other.size_);
  }

  const Drained drained_ = Drained::kRelease;
  std::unique_ptr<RawSlot[]> slots_;
  size_t capacity_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_RING_QUEUE_H_
