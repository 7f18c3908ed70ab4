// The page-locked host blocks (aclrtMallocHost) of this process, by address,
// so that a copy can tell whether its host side lives in one of them.
#ifndef ACLD_CLIENT_HOST_BLOCKS_H_
#define ACLD_CLIENT_HOST_BLOCKS_H_

#include <cstdint>
#include <map>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace acl_client {

class HostBlocks {
 public:
  struct Block {
    uint64_t size = 0;
    uint64_t tag = 0;  // what the transport needs to name it (e.g. a segment id)
  };
  struct Location {
    uint64_t tag = 0;
    uint64_t offset = 0;
  };

  void Add(const void* base, Block block) {
    absl::MutexLock lock(&mu_);
    blocks_[reinterpret_cast<uintptr_t>(base)] = block;
  }

  // The block starting at `base`, removed; nullopt when there is none.
  std::optional<Block> Remove(const void* base) {
    absl::MutexLock lock(&mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(base));
    if (it == blocks_.end()) return std::nullopt;
    Block block = it->second;
    blocks_.erase(it);
    return block;
  }

  // Where [pointer, pointer + count) lies, when it is inside one block.
  std::optional<Location> Find(const void* pointer, uint64_t count) const {
    const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
    absl::MutexLock lock(&mu_);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return std::nullopt;
    --it;
    const uint64_t offset = address - it->first;
    if (offset >= it->second.size || count > it->second.size - offset) return std::nullopt;
    return Location{it->second.tag, offset};
  }

 private:
  mutable absl::Mutex mu_;
  std::map<uintptr_t, Block> blocks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_HOST_BLOCKS_H_
