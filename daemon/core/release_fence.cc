#include "daemon/core/release_fence.h"

#include <utility>

namespace acld {

struct ReleaseFence::Epoch {
  ~Epoch() {
    // Later epochs are let go one at a time, not by recursion: a session
    // that frees between launches while an old one is queued makes a chain
    // as long as its frees.
    std::shared_ptr<Epoch> later = std::move(next);
    while (later != nullptr && later.use_count() == 1) {
      std::shared_ptr<Epoch> after = std::move(later->next);
      later.reset();
      later = std::move(after);
    }
  }

  std::vector<std::shared_ptr<void>> deferred;
  std::shared_ptr<Epoch> next;  // opened after this one closed
};

std::shared_ptr<void> ReleaseFence::Hold(LetGo& let_go) {
  if (open_ == nullptr) {
    open_ = std::make_shared<Epoch>();
    if (std::shared_ptr<Epoch> before = closed_.lock()) {
      before->next = open_;
      let_go.push_back(std::move(before));
    }
    closed_.reset();
  }
  return open_;
}

void ReleaseFence::Defer(const std::shared_ptr<void>& memory, LetGo& let_go) {
  std::shared_ptr<Epoch> epoch = closed_.lock();
  if (open_ != nullptr) {
    // Only holds copy it, and only under the caller's lock: a count of one
    // means that no launch and no earlier epoch holds it now.
    if (open_.use_count() == 1) return;
    epoch = std::exchange(open_, nullptr);
    closed_ = epoch;
  }
  if (epoch == nullptr) return;  // every launch before it is done
  epoch->deferred.push_back(memory);
  let_go.push_back(std::move(epoch));
}

}  // namespace acld
