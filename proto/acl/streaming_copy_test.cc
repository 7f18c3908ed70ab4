#include "proto/acl/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

// Bytes that differ between any two offsets a wrong page, line or block of
// the copy would confuse (the terms change every 512 bytes and every 128 KiB).
std::vector<uint8_t> Pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<uint8_t>(i * 131 + (i >> 9) + (i >> 17) * 7);
  }
  return bytes;
}

bool AllAre(const uint8_t* begin, const uint8_t* end, uint8_t value) {
  return std::all_of(begin, end, [value](uint8_t byte) { return byte == value; });
}

using Copy = void (*)(void*, const void*, size_t);

struct CopyCase {
  const char* name;
  Copy copy;
  size_t start;  // where copying by lines begins
};

void PrintTo(const CopyCase& c, std::ostream* os) { *os << c.name; }

class StreamingCopyTest : public ::testing::TestWithParam<CopyCase> {};

// Every misalignment of either side and every tail length, around where
// copying by lines starts. Each source is exactly as long as what is read
// from it, so that a read past its end is one past an allocation (ASan).
TEST_P(StreamingCopyTest, CopiesEveryByteWhateverTheAlignmentAndLength) {
  const size_t start = GetParam().start;
  const std::vector<uint8_t> pattern = Pattern(start + 256);
  for (size_t count : {size_t{0}, size_t{1}, size_t{4096}, start - 1, start, start + 63,
                       start + 129}) {
    for (size_t src_offset : {0, 1, 15, 16, 63}) {
      const std::vector<uint8_t> source(pattern.begin(), pattern.begin() + src_offset + count);
      for (size_t dst_offset : {0, 3, 16, 40}) {
        std::vector<uint8_t> target(start + 512, 0xEE);
        GetParam().copy(target.data() + dst_offset, source.data() + src_offset, count);
        ASSERT_TRUE(AllAre(target.data(), target.data() + dst_offset, 0xEE)) << "before";
        ASSERT_TRUE(std::equal(source.begin() + src_offset, source.end(),
                               target.begin() + dst_offset))
            << count << " bytes, offsets " << src_offset << "/" << dst_offset;
        ASSERT_TRUE(AllAre(target.data() + dst_offset + count, target.data() + target.size(), 0xEE))
            << "after";
      }
    }
  }
}

TEST_P(StreamingCopyTest, CopiesAboveTheRangeByLinesToo) {
  const std::vector<uint8_t> source = Pattern(kCopyByLinesMaxBytes + 4099);
  std::vector<uint8_t> target(source.size() + 8, 0xEE);
  GetParam().copy(target.data() + 3, source.data(), source.size());
  EXPECT_TRUE(std::equal(source.begin(), source.end(), target.begin() + 3));
  EXPECT_EQ(target[2], 0xEE);
  EXPECT_EQ(target[source.size() + 3], 0xEE);
}

TEST_P(StreamingCopyTest, OverlappingRangesMoveAsMemmoveDoes) {
  const size_t count = GetParam().start * 2;
  std::vector<uint8_t> bytes = Pattern(count + 4096);
  const std::vector<uint8_t> original = bytes;
  GetParam().copy(bytes.data() + 4096, bytes.data(), count);  // forward overlap
  EXPECT_TRUE(std::equal(original.begin(), original.begin() + count, bytes.begin() + 4096));
  bytes = original;
  GetParam().copy(bytes.data(), bytes.data() + 4096, count);  // backward overlap
  EXPECT_TRUE(std::equal(original.begin() + 4096, original.end(), bytes.begin()));
}

INSTANTIATE_TEST_SUITE_P(
    BothStores, StreamingCopyTest,
    ::testing::Values(CopyCase{"StreamingCopy", StreamingCopy, kStreamingCopyMinBytes},
                      CopyCase{"CopyForTheReader", CopyForTheReader, kReaderCopyByLinesMinBytes}),
    [](const ::testing::TestParamInfo<CopyCase>& info) { return info.param.name; });

}  // namespace
}  // namespace acld
