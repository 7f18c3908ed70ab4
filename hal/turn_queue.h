// A queue that takes turns between keys (owners, tenants): each key's items
// wait in their own queue, in order, and the keys with items waiting give one
// each in turn. A key with a thousand items waiting thus holds another key's
// one back by one item, not by a thousand.
//
// Not synchronized: its owner's lock guards it.
#ifndef ACLD_HAL_TURN_QUEUE_H_
#define ACLD_HAL_TURN_QUEUE_H_

#include <cstddef>
#include <deque>
#include <map>
#include <utility>

namespace hal {

template <typename Key, typename Item>
class TurnQueue {
 public:
  TurnQueue() = default;
  // order_ holds iterators into queues_: a copy's would point into this one.
  TurnQueue(const TurnQueue&) = delete;
  TurnQueue& operator=(const TurnQueue&) = delete;

  // A key's emptied queue is kept for its next item (most keys come back at
  // once: a queue made per item would cost an allocation each) while fewer
  // than this many are kept idle.
  static constexpr size_t kIdleKept = 64;

  void Push(const Key& key, Item item) {
    auto [it, added] = queues_.try_emplace(key);
    if (it->second.empty()) order_.push_back(it);
    it->second.push_back(std::move(item));
    ++size_;
  }
  // The oldest item of the key whose turn it is. Not empty().
  Item Pop() {
    const auto key = order_.front();
    order_.pop_front();
    Item item = std::move(key->second.front());
    key->second.pop_front();
    --size_;
    if (!key->second.empty()) {
      order_.push_back(key);
    } else if (queues_.size() - order_.size() > kIdleKept) {
      queues_.erase(key);
    }
    return item;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  using Queues = std::map<Key, std::deque<Item>>;
  Queues queues_;
  // The keys with items waiting, whose turn first (map iterators stay valid).
  std::deque<typename Queues::iterator> order_;
  size_t size_ = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_TURN_QUEUE_H_
