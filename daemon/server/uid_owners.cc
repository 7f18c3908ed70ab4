#include "daemon/server/uid_owners.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

// /etc/subuid of a site with a range for each of 100,000 users is about
// 3 MB; beyond this the file is not what acld expects.
constexpr size_t kMaxFileBytes = 16 << 20;

std::optional<uint32_t> UidOfUserName(const std::string& name) {
  long suggested = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(suggested > 0 ? static_cast<size_t>(suggested) : 4096);
  passwd entry{};
  passwd* found = nullptr;
  while (true) {
    const int error = getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (error == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (error != 0 || found == nullptr) return std::nullopt;
    return static_cast<uint32_t>(found->pw_uid);
  }
}

// UID_MIN of /etc/login.defs: the first uid a user (not a service) gets.
uint32_t FirstUserUid() {
  std::ifstream defs("/etc/login.defs");
  for (std::string line; std::getline(defs, line);) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    uint32_t uid = 0;
    if (words.size() >= 2 && words[0] == "UID_MIN" && absl::SimpleAtoi(words[1], &uid)) return uid;
  }
  return UidOwners::kDefaultFirstUserUid;
}

std::mutex host_mu;
std::shared_ptr<const UidOwners>& HostTable() {
  static auto* table = new std::shared_ptr<const UidOwners>(std::make_shared<UidOwners>());
  return *table;
}

}  // namespace

UidOwners UidOwners::Parse(absl::string_view text, const UidOfName& uid_of,
                           uint32_t first_user_uid) {
  UidOwners owners;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ':');
    uint32_t first = 0, count = 0, owner = 0;
    std::optional<uint32_t> named;
    const bool parsed = fields.size() == 3 && !fields[0].empty() &&
                        absl::SimpleAtoi(fields[1], &first) &&
                        absl::SimpleAtoi(fields[2], &count) && count > 0;
    if (parsed) {
      // As shadow's own tools read it: all digits is a uid, else a name.
      const bool digits = std::all_of(fields[0].begin(), fields[0].end(),
                                      [](char c) { return c >= '0' && c <= '9'; });
      if (digits && absl::SimpleAtoi(fields[0], &owner)) {
        named = owner;
      } else {
        named = uid_of(std::string(fields[0]));
      }
    }
    if (!named.has_value() || *named < first_user_uid) {
      ++owners.skipped_;
      continue;
    }
    owners.ranges_.push_back(Range{first, uint64_t{first} + count, *named});
  }
  std::stable_sort(owners.ranges_.begin(), owners.ranges_.end(),
                   [](const Range& a, const Range& b) { return a.first < b.first; });
  // A uid in two users' ranges would count as either; keep the range that
  // starts lower and skip what overlaps it.
  std::vector<Range> disjoint;
  for (const Range& range : owners.ranges_) {
    if (!disjoint.empty() && range.first < disjoint.back().end) {
      ++owners.skipped_;
      continue;
    }
    disjoint.push_back(range);
  }
  owners.ranges_ = std::move(disjoint);
  return owners;
}

absl::StatusOr<UidOwners> UidOwners::Read(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return UidOwners();
    return absl::FailedPreconditionError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  }
  struct stat info {};
  std::string text;
  absl::Status status;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    status = absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  } else if (info.st_uid != 0 || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    // Who may change it decides who counts as whom.
    status = absl::FailedPreconditionError(
        absl::StrCat(path, " must be root's and writable by no one else"));
  } else if (static_cast<uint64_t>(info.st_size) > kMaxFileBytes) {
    status = absl::FailedPreconditionError(
        absl::StrCat(path, " is larger than ", kMaxFileBytes, " bytes"));
  } else {
    char buffer[65536];
    ssize_t got = 0;
    while ((got = read(fd, buffer, sizeof(buffer))) > 0 && text.size() <= kMaxFileBytes) {
      text.append(buffer, static_cast<size_t>(got));
    }
    if (got < 0 || text.size() > kMaxFileBytes) {
      status = absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return Parse(text, UidOfUserName, FirstUserUid());
}

uint32_t UidOwners::CountedAs(uint32_t uid) const {
  auto after =
      std::upper_bound(ranges_.begin(), ranges_.end(), uid,
                       [](uint32_t value, const Range& range) { return value < range.first; });
  if (after == ranges_.begin()) return uid;
  const Range& range = *std::prev(after);
  return uid < range.end ? range.owner : uid;
}

std::shared_ptr<const UidOwners> UidOwners::Host() {
  std::lock_guard<std::mutex> lock(host_mu);
  return HostTable();
}

void UidOwners::SetHost(std::shared_ptr<const UidOwners> owners) {
  if (owners == nullptr) owners = std::make_shared<UidOwners>();
  std::lock_guard<std::mutex> lock(host_mu);
  HostTable() = std::move(owners);
}

bool UidOwnersFile::Refresh(bool force) {
  struct stat info {};
  const bool exists = stat(path_.c_str(), &info) == 0;
  if (!force && seen_.has_value() == exists &&
      (!exists || (seen_->st_ino == info.st_ino && seen_->st_size == info.st_size &&
                   seen_->st_mtim.tv_sec == info.st_mtim.tv_sec &&
                   seen_->st_mtim.tv_nsec == info.st_mtim.tv_nsec &&
                   seen_->st_ctim.tv_sec == info.st_ctim.tv_sec &&
                   seen_->st_ctim.tv_nsec == info.st_ctim.tv_nsec))) {
    return false;
  }
  if (exists) {
    seen_ = info;
  } else {
    seen_.reset();
  }
  absl::StatusOr<UidOwners> read = UidOwners::Read(path_);
  if (!read.ok()) {
    spdlog::error("subordinate uids: {}; still counting by the ranges read before",
                  std::string(read.status().message()));
    return false;
  }
  spdlog::info("subordinate uids: {} ranges of {} count as their owners ({} lines skipped)",
               read->ranges(), path_, read->skipped());
  UidOwners::SetHost(std::make_shared<UidOwners>(*std::move(read)));
  return true;
}

UidOwnersWatcher::UidOwnersWatcher(std::function<void(bool force)> refresh,
                                   absl::Duration every)
    : refresh_(std::move(refresh)), every_(every), thread_([this] { Run(); }) {}

UidOwnersWatcher::~UidOwnersWatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void UidOwnersWatcher::ReadNow() {
  absl::MutexLock lock(&mu_);
  forced_ = true;
}

void UidOwnersWatcher::Run() {
  while (true) {
    bool force;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(this, &UidOwnersWatcher::Asked), every_);
      if (stopping_) return;
      force = std::exchange(forced_, false);
    }
    refresh_(force);
  }
}

}  // namespace acld::server
