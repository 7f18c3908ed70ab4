#include "hal/sim/sim_printf.h"

#include <string>

#include "gtest/gtest.h"

namespace hal::sim {
namespace {

std::string Format(absl::string_view format, std::optional<int32_t> value,
                   size_t max_bytes = 1000) {
  std::string out;
  AppendDevicePrintf(format, value, max_bytes, out);
  return out;
}

TEST(DevicePrintfTest, FormatsTheKnownConversions) {
  EXPECT_EQ(Format("Source data: %d\n", 123), "Source data: 123\n");
  EXPECT_EQ(Format("%i %u %x", -1), "-1 4294967295 ffffffff");
  EXPECT_EQ(Format("100%% of %d", 7), "100% of 7");
  EXPECT_EQ(Format("Hello World\n", std::nullopt), "Hello World\n");
}

TEST(DevicePrintfTest, AnythingElseIsCopiedNotInterpreted) {
  // What printf(3) would read from the stack (%s, %n, %p) is text here.
  EXPECT_EQ(Format("%s %n %p %", 5), "%s %n %p %");
  EXPECT_EQ(Format("value %d", std::nullopt), "value %d");
  EXPECT_EQ(Format(std::string("a\0b", 3), 1), std::string("a\0b", 3));
}

TEST(DevicePrintfTest, NeverExceedsItsBound) {
  EXPECT_EQ(Format("abcdef", 1, 4), "abcd");
  EXPECT_EQ(Format("%d%d%d", -2000000000, 10), "-200000000");  // cut at 10 bytes
  std::string out = "xx";
  AppendDevicePrintf("%d", 12345, 4, out);
  EXPECT_EQ(out, "xx12");
}

}  // namespace
}  // namespace hal::sim
