#include "tools/simbin/simbin_lib.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace acld::simbin {
namespace {

using ::testing::HasSubstr;

const std::set<std::string> kKnown = {"add_f16_2048", "add_one_u32"};

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(SimbinTest, ParsesMappingsInOrder) {
  absl::StatusOr<std::vector<hal::sim::SimBinaryEntry>> entries =
      ParseMappings({"add_custom=add_f16_2048", "bump=add_one_u32", "again=add_f16_2048"}, kKnown);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].function, "add_custom");
  EXPECT_EQ((*entries)[0].kernel, "add_f16_2048");
  EXPECT_EQ((*entries)[2].function, "again");
}

TEST(SimbinTest, RejectsBadMappings) {
  EXPECT_THAT(Message(ParseMappings({"add_custom"}, kKnown).status()),
              HasSubstr("not FUNCTION=KERNEL"));
  EXPECT_THAT(Message(ParseMappings({"add_custom=nope"}, kKnown).status()),
              HasSubstr("'nope' is not a built-in sim kernel (known: add_f16_2048, add_one_u32)"));
  EXPECT_THAT(Message(ParseMappings({"=add_one_u32"}, kKnown).status()), HasSubstr("is empty"));
  EXPECT_THAT(Message(ParseMappings({"f="}, kKnown).status()), HasSubstr("is empty"));
  EXPECT_THAT(Message(ParseMappings({"f=add_one_u32", "f=add_f16_2048"}, kKnown).status()),
              HasSubstr("more than once"));
  EXPECT_THAT(Message(ParseMappings({"a b=add_one_u32"}, kKnown).status()),
              HasSubstr("printable non-space ASCII"));
  EXPECT_THAT(Message(ParseMappings({}, kKnown).status()), HasSubstr("names no function"));
}

TEST(SimbinTest, WritesAFileThatParses) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string path = dir + "/simbin_test_" + std::to_string(getpid()) + ".o";
  const std::string bytes = hal::sim::EncodeSimBinary({{"add_custom", "add_f16_2048"}});
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());  // replaces
  absl::StatusOr<std::string> read = ReadFileBounded(path, hal::sim::kMaxSimBinaryBytes);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  EXPECT_TRUE(hal::sim::ParseSimBinary(*read).ok());
  EXPECT_FALSE(ReadFileBounded(path, bytes.size() - 1).ok());
  unlink(path.c_str());
  EXPECT_FALSE(ReadFileBounded(path, 100).ok());
  EXPECT_FALSE(WriteFileAtomically(dir + "/no/such/dir/x.o", bytes).ok());
}

}  // namespace
}  // namespace acld::simbin
