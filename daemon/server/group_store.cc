#include "daemon/server/group_store.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace acld::server {
namespace {

constexpr char kFileName[] = "groups.json";
constexpr int kFormatVersion = 1;
constexpr size_t kMaxKeyBytes = 63;
constexpr size_t kMaxValueBytes = 255;

bool IsLabelText(const std::string& text) {
  for (char c : text) {
    if (c <= ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

// `value` as an integer of type Int: a JSON integer within Int's range, not
// a boolean, a fraction or a number that would wrap when converted.
template <typename Int>
Int IntegerIn(const nlohmann::json& value, const char* field) {
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
  } else if (value.is_number_integer()) {
    const int64_t number = value.get<int64_t>();
    fits = number >= static_cast<int64_t>(std::numeric_limits<Int>::min()) &&
           (number < 0 || static_cast<uint64_t>(number) <=
                              static_cast<uint64_t>(std::numeric_limits<Int>::max()));
  }
  if (!fits) throw std::invalid_argument(absl::StrCat(field, " is not a number in range"));
  return value.get<Int>();
}

template <typename Int>
std::vector<Int> IntegersIn(const nlohmann::json& value, const char* field) {
  if (!value.is_array()) throw std::invalid_argument(absl::StrCat(field, " is not a list"));
  std::vector<Int> numbers;
  for (const nlohmann::json& item : value) numbers.push_back(IntegerIn<Int>(item, field));
  return numbers;
}

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what, " (acld keeps its quota groups "
                                          "there; fix or remove the file)"));
}

}  // namespace

absl::Status CheckGroupLabels(const GroupLabels& labels) {
  if (labels.size() > kMaxGroupLabels) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels.size(), " labels; a group has at most ", kMaxGroupLabels));
  }
  for (const auto& [key, value] : labels) {
    if (key.empty() || key.size() > kMaxKeyBytes || !IsLabelText(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("label key '", absl::CHexEscape(key.substr(0, kMaxKeyBytes)),
                       "': 1 to 63 printable ASCII characters, no spaces or '='"));
    }
    if (value.size() > kMaxValueBytes || !IsLabelText(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the value of label '", key,
                       "': at most 255 printable ASCII characters, no spaces or '='"));
    }
  }
  return absl::OkStatus();
}

bool IsGroupId(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<std::string> NewGroupId() {
  char bytes[16];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return absl::UnavailableError(absl::StrCat("getrandom: ", std::strerror(errno)));
  }
  return absl::BytesToHexString(absl::string_view(bytes, sizeof(bytes)));
}

absl::StatusOr<std::vector<GroupRecord>> LoadGroups(const std::string& state_dir) {
  const std::string path = absl::StrCat(state_dir, "/", kFileName);
  std::ifstream file(path);
  if (!file.is_open()) {
    if (errno == ENOENT) return std::vector<GroupRecord>();
    return absl::UnavailableError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json document = nlohmann::json::parse(text.str(), nullptr, false);
  if (document.is_discarded() || !document.is_object()) return Corrupt(path, "not JSON");
  const auto version = document.find("version");
  if (version == document.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kFormatVersion || !document.contains("groups") ||
      !document["groups"].is_array()) {
    return Corrupt(path, absl::StrCat("not version ", kFormatVersion, " of acld's group file"));
  }
  std::vector<GroupRecord> records;
  for (const nlohmann::json& entry : document["groups"]) {
    GroupRecord record;
    try {
      record.id = entry.at("id").get<std::string>();
      record.spec.devices = IntegersIn<int32_t>(entry.at("devices"), "devices");
      record.spec.memory_limits = IntegersIn<uint64_t>(entry.at("memory_bytes"), "memory_bytes");
      record.spec.max_streams = IntegerIn<uint32_t>(entry.at("max_streams"), "max_streams");
      record.spec.max_sessions = IntegerIn<uint32_t>(entry.at("max_sessions"), "max_sessions");
      record.labels = entry.at("labels").get<GroupLabels>();
      record.created_unix_seconds =
          IntegerIn<int64_t>(entry.at("created_unix_seconds"), "created_unix_seconds");
    } catch (const std::exception& error) {  // nlohmann's, and IntegerIn's
      return Corrupt(path, absl::StrCat("a group record: ", error.what()));
    }
    if (!IsGroupId(record.id)) return Corrupt(path, "a group id is not 32 hex digits");
    absl::Status labels = CheckGroupLabels(record.labels);
    if (!labels.ok()) return Corrupt(path, absl::StrCat("group ", record.id, ": ", labels.message()));
    records.push_back(std::move(record));
  }
  return records;
}

absl::Status SaveGroups(const std::string& state_dir, const std::vector<GroupRecord>& groups) {
  nlohmann::json list = nlohmann::json::array();
  for (const GroupRecord& record : groups) {
    list.push_back({{"id", record.id},
                    {"devices", record.spec.devices},
                    {"memory_bytes", record.spec.memory_limits},
                    {"max_streams", record.spec.max_streams},
                    {"max_sessions", record.spec.max_sessions},
                    {"labels", record.labels},
                    {"created_unix_seconds", record.created_unix_seconds}});
  }
  const std::string text =
      nlohmann::json{{"version", kFormatVersion}, {"groups", std::move(list)}}.dump(2) + "\n";
  // Written beside, flushed, then renamed over the old file: atomic.
  const std::string path = absl::StrCat(state_dir, "/", kFileName);
  const std::string temporary = path + ".new";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                      0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", temporary, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool complete = written == text.size() && fsync(fd) == 0;
  close(fd);
  if (!complete || rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    unlink(temporary.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", reason));
  }
  return absl::OkStatus();
}

}  // namespace acld::server
