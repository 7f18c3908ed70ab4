#include "daemon/server/group_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// --- CheckGroupLabels -----------------------------------------------------

bool Invalid(const GroupLabels& labels) {
  return CheckGroupLabels(labels).code() == absl::StatusCode::kInvalidArgument;
}

TEST(GroupStoreTest, AtMost32Labels) {
  GroupLabels labels;
  for (int i = 0; i < 32; ++i) labels["k" + std::to_string(i)] = "v";
  EXPECT_TRUE(CheckGroupLabels(labels).ok());
  labels["one-more"] = "v";
  absl::Status status = CheckGroupLabels(labels);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("33"), absl::string_view::npos) << status;
}

TEST(GroupStoreTest, KeysHaveOneTo63PrintableCharacters) {
  EXPECT_TRUE(Invalid({{"", "value"}}));
  EXPECT_TRUE(CheckGroupLabels({{"k", "v"}}).ok());
  EXPECT_TRUE(CheckGroupLabels({{std::string(63, 'k'), "v"}}).ok());
  EXPECT_TRUE(Invalid({{std::string(64, 'k'), "v"}}));
  EXPECT_TRUE(Invalid({{std::string(10000, 'k'), "v"}}));
}

TEST(GroupStoreTest, ValuesHaveAtMost255PrintableCharacters) {
  EXPECT_TRUE(CheckGroupLabels({{"k", std::string(255, 'v')}}).ok());
  EXPECT_TRUE(Invalid({{"k", std::string(256, 'v')}}));
  EXPECT_TRUE(CheckGroupLabels({{"k", ""}}).ok()) << "an empty value is allowed";
}

TEST(GroupStoreTest, SpacesEqualSignsNonAsciiAndControlCharactersAreRefused) {
  for (const std::string& bad :
       {std::string("a b"), std::string(" "), std::string("a=b"), std::string("="),
        std::string("caf\xc3\xa9"), std::string("\x80"), std::string("\xff"),
        std::string("a\nb"), std::string("a\tb"), std::string("\r"), std::string("\x1b[2J"),
        std::string("\x7f"), std::string("a\0b", 3)}) {
    EXPECT_TRUE(Invalid({{bad, "v"}})) << "key '" << bad << "'";
    EXPECT_TRUE(Invalid({{"k", bad}})) << "value '" << bad << "'";
  }
}

TEST(GroupStoreTest, OrdinaryLabelsPass) {
  EXPECT_TRUE(CheckGroupLabels({}).ok());
  EXPECT_TRUE(CheckGroupLabels({{"pod", "train-7f9c"},
                                {"namespace", "ml"},
                                {"acld.io/slice", "npu-2-slice-0"},
                                {"empty", ""},
                                {"punctuation", "!\"#$%&'()*+,-./:;<>?@[\\]^_`{|}~"}})
                  .ok());
}

// --- Ids ------------------------------------------------------------------

TEST(GroupStoreTest, GroupIdsAre32LowercaseHexDigits) {
  EXPECT_TRUE(IsGroupId("0123456789abcdef0123456789abcdef"));
  EXPECT_TRUE(IsGroupId(std::string(32, 'f')));
  EXPECT_FALSE(IsGroupId(""));
  EXPECT_FALSE(IsGroupId(std::string(31, 'a')));
  EXPECT_FALSE(IsGroupId(std::string(33, 'a')));
  EXPECT_FALSE(IsGroupId("0123456789ABCDEF0123456789abcdef"));
  EXPECT_FALSE(IsGroupId("0123456789abcdeg0123456789abcdef"));
  EXPECT_FALSE(IsGroupId("../../../../../../etc/passwd....."));
  EXPECT_FALSE(IsGroupId(std::string("0123456789abcdef0123456789abcde\0", 32)));
}

TEST(GroupStoreTest, NewGroupIdsAreDistinctGroupIds) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<std::string> id = NewGroupId();
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->size(), 32u);
    EXPECT_TRUE(IsGroupId(*id)) << *id;
    EXPECT_TRUE(seen.insert(*id).second) << "repeated: " << *id;
  }
}

// --- Persistence ----------------------------------------------------------

// A fresh state directory per test.
std::string StateDir(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

GroupRecord Record(const std::string& id) {
  GroupRecord record;
  record.id = id;
  record.spec.devices = {2, 0, 3};
  record.spec.memory_limits = {uint64_t{1} << 30, 0, std::numeric_limits<uint64_t>::max()};
  record.spec.max_streams = 64;
  record.spec.max_sessions = 7;
  record.labels = {{"pod", "train-1"}, {"namespace", "ml"}, {"empty", ""}};
  record.created_unix_seconds = 1764633600;
  return record;
}

void ExpectSame(const GroupRecord& loaded, const GroupRecord& saved) {
  EXPECT_EQ(loaded.id, saved.id);
  EXPECT_EQ(loaded.spec.devices, saved.spec.devices);
  EXPECT_EQ(loaded.spec.memory_limits, saved.spec.memory_limits);
  EXPECT_EQ(loaded.spec.max_streams, saved.spec.max_streams);
  EXPECT_EQ(loaded.spec.max_sessions, saved.spec.max_sessions);
  EXPECT_EQ(loaded.labels, saved.labels);
  EXPECT_EQ(loaded.created_unix_seconds, saved.created_unix_seconds);
}

TEST(GroupStoreTest, NoFileIsNoGroups) {
  const std::string dir = StateDir("no-file");
  absl::StatusOr<std::vector<GroupRecord>> loaded = LoadGroups(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->empty());
}

TEST(GroupStoreTest, SavedGroupsLoadBackWithEveryField) {
  const std::string dir = StateDir("round-trip");
  GroupRecord second = Record("fedcba9876543210fedcba9876543210");
  second.spec = QuotaGroupSpec{{1}, {4096}, 0, 0};
  second.labels = {};
  second.created_unix_seconds = 0;
  const std::vector<GroupRecord> saved = {Record("0123456789abcdef0123456789abcdef"), second};
  ASSERT_TRUE(SaveGroups(dir, saved).ok());
  absl::StatusOr<std::vector<GroupRecord>> loaded = LoadGroups(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 2u);
  ExpectSame((*loaded)[0], saved[0]);
  ExpectSame((*loaded)[1], saved[1]);
  // None saved is none loaded (and not "no file").
  ASSERT_TRUE(SaveGroups(dir, {}).ok());
  loaded = LoadGroups(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->empty());
}

TEST(GroupStoreTest, ASaveReplacesTheFileWithNothingLeftBeside) {
  const std::string dir = StateDir("atomic");
  ASSERT_TRUE(SaveGroups(dir, {Record("0123456789abcdef0123456789abcdef")}).ok());
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"groups.json"});
  struct stat info;
  ASSERT_EQ(stat((dir + "/groups.json").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ino_t first_inode = info.st_ino;
  // A leftover of a save that crashed halfway is overwritten, not read.
  WriteFile(dir + "/groups.json.new", "{ half a fi");
  GroupRecord changed = Record("fedcba9876543210fedcba9876543210");
  ASSERT_TRUE(SaveGroups(dir, {changed}).ok());
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"groups.json"});
  ASSERT_EQ(stat((dir + "/groups.json").c_str(), &info), 0);
  EXPECT_NE(info.st_ino, first_inode) << "renamed over, not rewritten in place";
  absl::StatusOr<std::vector<GroupRecord>> loaded = LoadGroups(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 1u);
  ExpectSame((*loaded)[0], changed);
}

TEST(GroupStoreTest, ASaveThatCannotWriteFailsAndKeepsTheOldFile) {
  const std::string dir = StateDir("unwritable");
  ASSERT_TRUE(SaveGroups(dir, {Record("0123456789abcdef0123456789abcdef")}).ok());
  const std::string before = ReadFile(dir + "/groups.json");
  EXPECT_FALSE(SaveGroups(dir + "/missing", {}).ok());
  // A directory where the temporary file goes: the write fails.
  std::filesystem::create_directory(dir + "/groups.json.new");
  EXPECT_FALSE(SaveGroups(dir, {}).ok());
  EXPECT_EQ(ReadFile(dir + "/groups.json"), before);
}

// Every damaged file is DataLoss naming the file, never a crash (nor an
// exception escaping LoadGroups).
void ExpectDataLoss(const std::string& name, const std::string& text) {
  SCOPED_TRACE(name + ": " + text);
  const std::string dir = StateDir("corrupt-" + name);
  WriteFile(dir + "/groups.json", text);
  absl::StatusOr<std::vector<GroupRecord>> loaded;
  try {
    loaded = LoadGroups(dir);
  } catch (const std::exception& error) {
    ADD_FAILURE() << "LoadGroups threw: " << error.what();
    return;
  }
  ASSERT_FALSE(loaded.ok()) << loaded->size() << " records";
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
  EXPECT_NE(loaded.status().message().find("groups.json"), absl::string_view::npos)
      << loaded.status();
}

constexpr char kGoodEntry[] =
    R"({"id": "0123456789abcdef0123456789abcdef", "devices": [0, 1], )"
    R"("memory_bytes": [4096, 0], "max_streams": 4, "max_sessions": 2, )"
    R"("labels": {"pod": "p"}, "created_unix_seconds": 1})";

std::string File(const std::string& entry) {
  return std::string(R"({"version": 1, "groups": [)") + entry + "]}";
}

// With `key`'s value replaced by `value` in an otherwise good entry.
std::string EntryWith(const std::string& key, const std::string& value) {
  std::string entry = kGoodEntry;
  const std::string quoted = "\"" + key + "\": ";
  const size_t start = entry.find(quoted) + quoted.size();
  size_t end = start;
  int depth = 0;
  bool in_string = false;
  for (; end < entry.size(); ++end) {
    const char c = entry[end];
    if (in_string) {
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) break;
  }
  return entry.substr(0, start) + value + entry.substr(end);
}

TEST(GroupStoreTest, TheGoodEntryOfTheseTestsLoads) {
  const std::string dir = StateDir("good-entry");
  WriteFile(dir + "/groups.json", File(kGoodEntry));
  absl::StatusOr<std::vector<GroupRecord>> loaded = LoadGroups(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].spec.memory_limits, (std::vector<uint64_t>{4096, 0}));
  // EntryWith replaces one value only.
  const std::string changed = EntryWith("max_streams", "9");
  EXPECT_NE(changed.find(R"("max_streams": 9, "max_sessions": 2)"), std::string::npos) << changed;
  EXPECT_NE(EntryWith("labels", "{}").find(R"("labels": {}, "created)"), std::string::npos);
}

TEST(GroupStoreTest, ACorruptFileIsDataLoss) {
  ExpectDataLoss("empty", "");
  ExpectDataLoss("garbage", "not json at all");
  ExpectDataLoss("truncated", File(kGoodEntry).substr(0, 60));
  ExpectDataLoss("array", "[]");
  ExpectDataLoss("string", "\"groups\"");
  ExpectDataLoss("binary", std::string("\0\xff\xfe{", 4));
}

TEST(GroupStoreTest, AnotherVersionIsDataLoss) {
  ExpectDataLoss("version-2", R"({"version": 2, "groups": []})");
  ExpectDataLoss("version-0", R"({"version": 0, "groups": []})");
  ExpectDataLoss("no-version", R"({"groups": []})");
  ExpectDataLoss("no-groups", R"({"version": 1})");
  ExpectDataLoss("groups-object", R"({"version": 1, "groups": {}})");
}

// BUG (found by this test, not fixed here): group_store.cc:86 reads the
// version with nlohmann's json::value("version", 0), which throws
// json::type_error when "version" is not a number; the exception escapes
// LoadGroups (it is outside the try block), so QuotaGroups::Restore, and
// with it acld at startup, dies on std::terminate instead of reporting
// DataLoss.
TEST(GroupStoreTest, AVersionOfTheWrongTypeIsDataLoss) {
  ExpectDataLoss("version-string", R"({"version": "1", "groups": []})");
  ExpectDataLoss("version-null", R"({"version": null, "groups": []})");
  ExpectDataLoss("version-array", R"({"version": [1], "groups": []})");
}

TEST(GroupStoreTest, ABadGroupIdIsDataLoss) {
  ExpectDataLoss("id-short", File(EntryWith("id", R"("0123")")));
  ExpectDataLoss("id-upper", File(EntryWith("id", R"("0123456789ABCDEF0123456789ABCDEF")")));
  ExpectDataLoss("id-path", File(EntryWith("id", R"("../../../../../../../etc/passwd..")")));
  ExpectDataLoss("id-empty", File(EntryWith("id", R"("")")));
}

TEST(GroupStoreTest, ABadLabelIsDataLoss) {
  ExpectDataLoss("label-space", File(EntryWith("labels", R"({"a b": "c"})")));
  ExpectDataLoss("label-value-newline", File(EntryWith("labels", R"({"pod": "x\ny"})")));
  ExpectDataLoss("label-empty-key", File(EntryWith("labels", R"({"": "c"})")));
  ExpectDataLoss("label-equals", File(EntryWith("labels", R"({"a": "b=c"})")));
}

TEST(GroupStoreTest, AFieldOfTheWrongTypeOrMissingIsDataLoss) {
  ExpectDataLoss("id-number", File(EntryWith("id", "17")));
  ExpectDataLoss("devices-string", File(EntryWith("devices", R"("0,1")")));
  ExpectDataLoss("devices-strings", File(EntryWith("devices", R"(["0", "1"])")));
  ExpectDataLoss("memory-null", File(EntryWith("memory_bytes", "null")));
  ExpectDataLoss("memory-object", File(EntryWith("memory_bytes", R"({"0": 1})")));
  ExpectDataLoss("streams-string", File(EntryWith("max_streams", R"("4")")));
  ExpectDataLoss("labels-array", File(EntryWith("labels", R"(["pod=p"])")));
  ExpectDataLoss("labels-number-value", File(EntryWith("labels", R"({"pod": 1})")));
  ExpectDataLoss("created-string", File(EntryWith("created_unix_seconds", R"("yesterday")")));
  ExpectDataLoss("entry-number", File("1"));
  ExpectDataLoss("entry-array", File("[]"));
  ExpectDataLoss("entry-empty", File("{}"));
  ExpectDataLoss("entry-null", File("null"));
  // One good entry does not carry a bad one.
  ExpectDataLoss("second-bad", File(std::string(kGoodEntry) + ", " + EntryWith("id", "1")));
}

// BUG (found by this test, not fixed here; minor): group_store.cc:95-98 read
// numbers with nlohmann's get<int32_t/uint64_t/uint32_t>(), which converts
// booleans and casts out-of-range and negative numbers silently instead of
// failing: "max_sessions": true loads as 1, a memory limit of -1 as 2^64-1
// (no limit in effect), "max_streams": -1 as 4294967295, and device
// 4294967296 as device 0, which CheckQuotaGroupSpec then accepts.
TEST(GroupStoreTest, ANumberOfTheWrongKindOrOutOfRangeIsDataLoss) {
  ExpectDataLoss("sessions-bool", File(EntryWith("max_sessions", "true")));
  ExpectDataLoss("memory-negative", File(EntryWith("memory_bytes", "[-1, 0]")));
  ExpectDataLoss("streams-negative", File(EntryWith("max_streams", "-1")));
  ExpectDataLoss("device-wraps", File(EntryWith("devices", "[4294967296, 1]")));
}

}  // namespace
}  // namespace acld::server
