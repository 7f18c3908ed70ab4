#include "proto/acl/streaming_copy.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

std::vector<uint8_t> Pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  return bytes;
}

using Copy = void (*)(void*, const void*, size_t);

// Every misalignment of either side and every tail length, around `start`
// (where copying by lines begins).
void ExpectEveryByteCopied(Copy copy, size_t start) {
  const std::vector<uint8_t> source = Pattern(start + 256);
  for (size_t count : {size_t{0}, size_t{1}, size_t{4096}, start - 1, start, start + 63,
                       start + 129}) {
    for (size_t src_offset : {0, 1, 15, 16, 63}) {
      for (size_t dst_offset : {0, 3, 16, 40}) {
        std::vector<uint8_t> target(start + 512, 0xEE);
        copy(target.data() + dst_offset, source.data() + src_offset, count);
        for (size_t i = 0; i < dst_offset; ++i) ASSERT_EQ(target[i], 0xEE) << "before";
        ASSERT_TRUE(std::equal(source.begin() + src_offset, source.begin() + src_offset + count,
                               target.begin() + dst_offset))
            << count << " bytes, offsets " << src_offset << "/" << dst_offset;
        for (size_t i = dst_offset + count; i < target.size(); ++i) {
          ASSERT_EQ(target[i], 0xEE) << "after, at " << i;
        }
      }
    }
  }
}

TEST(StreamingCopyTest, CopiesEveryByteWhateverTheAlignmentAndLength) {
  ExpectEveryByteCopied(StreamingCopy, kStreamingCopyMinBytes);
}

TEST(StreamingCopyTest, CopyForTheReaderCopiesEveryByteWhateverTheAlignmentAndLength) {
  ExpectEveryByteCopied(CopyForTheReader, kReaderCopyByLinesMinBytes);
}

TEST(StreamingCopyTest, CopiesAboveTheStreamingRangeToo) {
  const std::vector<uint8_t> source = Pattern(kStreamingCopyMaxBytes + 4099);
  std::vector<uint8_t> target(source.size() + 8, 0xEE);
  StreamingCopy(target.data() + 3, source.data(), source.size());
  EXPECT_TRUE(std::equal(source.begin(), source.end(), target.begin() + 3));
  EXPECT_EQ(target[2], 0xEE);
  EXPECT_EQ(target[source.size() + 3], 0xEE);
}

TEST(StreamingCopyTest, OverlappingRangesMoveAsMemmoveDoes) {
  const size_t count = kStreamingCopyMinBytes * 2;
  std::vector<uint8_t> bytes = Pattern(count + 4096);
  const std::vector<uint8_t> original = bytes;
  StreamingCopy(bytes.data() + 4096, bytes.data(), count);  // forward overlap
  EXPECT_TRUE(std::equal(original.begin(), original.begin() + count, bytes.begin() + 4096));
  bytes = original;
  StreamingCopy(bytes.data(), bytes.data() + 4096, count);  // backward overlap
  EXPECT_TRUE(std::equal(original.begin() + 4096, original.end(), bytes.begin()));
}

}  // namespace
}  // namespace acld
