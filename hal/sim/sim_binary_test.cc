#include "hal/sim/sim_binary.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hal::sim {
namespace {

using ::testing::HasSubstr;

// Builds binaries by hand, so tests can write what EncodeSimBinary never would.
class Bytes {
 public:
  Bytes& Raw(absl::string_view bytes) {
    out_.append(bytes.data(), bytes.size());
    return *this;
  }
  Bytes& U16(uint16_t v) {
    out_.push_back(static_cast<char>(v & 0xFF));
    out_.push_back(static_cast<char>(v >> 8));
    return *this;
  }
  Bytes& U32(uint32_t v) {
    for (int s = 0; s < 32; s += 8) out_.push_back(static_cast<char>((v >> s) & 0xFF));
    return *this;
  }
  Bytes& Name(absl::string_view name) {
    U16(static_cast<uint16_t>(name.size()));
    return Raw(name);
  }
  Bytes& Header(uint32_t count) { return Raw("ACLDSIMB").U32(1).U32(count); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

void ExpectInvalid(absl::string_view bytes, absl::string_view message_part) {
  absl::StatusOr<std::vector<SimBinaryEntry>> parsed = ParseSimBinary(bytes);
  ASSERT_FALSE(parsed.ok()) << "parsed " << parsed->size() << " entries";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(message_part));
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("sim binary: "));
}

TEST(SimBinaryTest, EncodesTheDocumentedLayout) {
  const std::string bytes = EncodeSimBinary({{"add_custom", "add_f16_2048"}});
  const std::string expected =
      Bytes().Header(1).Name("add_custom").Name("add_f16_2048").str();
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(bytes.size(), 16u + 2 + 10 + 2 + 12);
  EXPECT_EQ(bytes.substr(0, 8), "ACLDSIMB");
  EXPECT_EQ(bytes[8], 1);  // version, little-endian
  EXPECT_EQ(bytes[12], 1);  // count, little-endian
}

TEST(SimBinaryTest, RoundTrips) {
  const std::vector<std::vector<SimBinaryEntry>> cases = {
      {{"add_custom", "add_f16_2048"}},
      {{"a", "b"}},
      {{"add_custom", "add_f16_2048"}, {"add_custom_v2", "add_f16_2048"}, {"bump", "add_one_u32"}},
      {{std::string(256, 'f'), std::string(256, 'k')}},
      {{"!~", "~!"}},
  };
  for (const auto& entries : cases) {
    ASSERT_TRUE(ValidateSimBinaryEntries(entries).ok());
    absl::StatusOr<std::vector<SimBinaryEntry>> parsed = ParseSimBinary(EncodeSimBinary(entries));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, entries);
  }
}

TEST(SimBinaryTest, RoundTripsTheLargestBinary) {
  std::vector<SimBinaryEntry> entries;
  for (uint32_t i = 0; i < kMaxSimBinaryEntries; ++i) {
    std::string function = std::to_string(i);
    function.resize(kMaxSimBinaryNameBytes, 'x');
    entries.push_back({function, std::string(kMaxSimBinaryNameBytes, 'k')});
  }
  const std::string bytes = EncodeSimBinary(entries);
  EXPECT_LE(bytes.size(), kMaxSimBinaryBytes);
  absl::StatusOr<std::vector<SimBinaryEntry>> parsed = ParseSimBinary(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, entries);
}

TEST(SimBinaryTest, RejectsBadMagic) {
  ExpectInvalid("", "not a sim binary");
  ExpectInvalid("ACLDSIM", "not a sim binary");
  ExpectInvalid(Bytes().Raw("ACLDSIMX").U32(1).U32(1).Name("f").Name("k").str(),
                "not a sim binary");
  ExpectInvalid(Bytes().Raw("acldsimb").U32(1).U32(1).Name("f").Name("k").str(),
                "not a sim binary");
}

TEST(SimBinaryTest, SaysWhenItIsGivenAnElfFile) {
  const std::string elf = std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(64, '\0');
  EXPECT_TRUE(LooksLikeElf(elf));
  EXPECT_FALSE(LooksLikeElf("ACLDSIMB"));
  ExpectInvalid(elf, "ELF file");
}

TEST(SimBinaryTest, RejectsOtherVersions) {
  for (uint32_t version : {0u, 2u, 0x01000000u, 0xFFFFFFFFu}) {
    ExpectInvalid(Bytes().Raw("ACLDSIMB").U32(version).U32(1).Name("f").Name("k").str(),
                  "unsupported version " + std::to_string(version));
  }
}

TEST(SimBinaryTest, RejectsTruncatedHeaders) {
  ExpectInvalid(Bytes().Raw("ACLDSIMB").str(), "no version field");
  ExpectInvalid(Bytes().Raw("ACLDSIMB").Raw("\x01\x00\x00").str(), "no version field");
  ExpectInvalid(Bytes().Raw("ACLDSIMB").U32(1).str(), "no entry count field");
  ExpectInvalid(Bytes().Raw("ACLDSIMB").U32(1).Raw("\x01").str(), "no entry count field");
}

TEST(SimBinaryTest, RejectsBadEntryCounts) {
  ExpectInvalid(Bytes().Header(0).str(), "names no function");
  ExpectInvalid(Bytes().Header(1025).str(), "entry count 1025");
  ExpectInvalid(Bytes().Header(0xFFFFFFFFu).Name("f").Name("k").str(), "entry count 4294967295");
  // More entries declared than the bytes could hold.
  ExpectInvalid(Bytes().Header(2).Name("f").Name("k").str(), "needs at least 12 bytes");
}

TEST(SimBinaryTest, RejectsTruncatedEntries) {
  const std::string whole = Bytes().Header(2).Name("fa").Name("ka").Name("fb").Name("kb").str();
  ASSERT_TRUE(ParseSimBinary(whole).ok());
  for (size_t size = 0; size < whole.size(); ++size) {
    EXPECT_FALSE(ParseSimBinary(absl::string_view(whole).substr(0, size)).ok()) << size;
  }
  // A name length running past the end.
  ExpectInvalid(Bytes().Header(1).Name("f").U16(40).Raw("kernel").str(), "truncated at byte");
  // A missing kernel name length (count check passes: 6 bytes follow).
  ExpectInvalid(Bytes().Header(1).U16(4).Raw("func").str(), "truncated at byte 22");
}

TEST(SimBinaryTest, RejectsBadNames) {
  ExpectInvalid(Bytes().Header(1).Name("").Name("kernel").Raw("pad").str(), "has length 0");
  ExpectInvalid(Bytes().Header(1).Name("f").Name("").Raw("pad").str(), "has length 0");
  ExpectInvalid(Bytes().Header(1).Name(std::string(257, 'f')).Name("k").str(), "has length 257");
  ExpectInvalid(Bytes().Header(1).Name("f").Name(std::string(257, 'k')).str(), "has length 257");
  ExpectInvalid(Bytes().Header(1).U16(0xFFFF).Raw("fffff").str(), "has length 65535");
  for (char bad : {' ', '\0', '\n', '\x7f', '\x80', '\xff'}) {
    ExpectInvalid(Bytes().Header(1).Name(std::string("ad") + bad + "d").Name("k").str(),
                  "printable non-space ASCII");
    ExpectInvalid(Bytes().Header(1).Name("f").Name(std::string(1, bad)).str(),
                  "printable non-space ASCII");
  }
}

TEST(SimBinaryTest, RejectsDuplicateFunctions) {
  ExpectInvalid(Bytes().Header(2).Name("add").Name("k1").Name("add").Name("k2").str(),
                "function 'add' appears more than once");
  // The same kernel for two functions is fine.
  EXPECT_TRUE(ParseSimBinary(Bytes().Header(2).Name("a").Name("k").Name("b").Name("k").str()).ok());
}

TEST(SimBinaryTest, RejectsTrailingBytes) {
  ExpectInvalid(Bytes().Header(1).Name("f").Name("k").Raw(absl::string_view("\0", 1)).str(),
                "1 trailing bytes");
  ExpectInvalid(Bytes().Header(1).Name("f").Name("k").Raw("garbage").str(), "7 trailing bytes");
}

TEST(SimBinaryTest, RejectsOversizedInput) {
  std::string bytes = Bytes().Header(1).Name("f").Name("k").str();
  bytes.resize(kMaxSimBinaryBytes + 1, 'x');
  ExpectInvalid(bytes, "at most 1048576 bytes");
}

TEST(SimBinaryTest, ValidateRejectsWhatParseWould) {
  EXPECT_FALSE(ValidateSimBinaryEntries({}).ok());
  EXPECT_FALSE(ValidateSimBinaryEntries({{"", "k"}}).ok());
  EXPECT_FALSE(ValidateSimBinaryEntries({{"f", ""}}).ok());
  EXPECT_FALSE(ValidateSimBinaryEntries({{"f f", "k"}}).ok());
  EXPECT_FALSE(ValidateSimBinaryEntries({{"f", std::string(257, 'k')}}).ok());
  EXPECT_FALSE(ValidateSimBinaryEntries({{"f", "a"}, {"f", "b"}}).ok());
  EXPECT_FALSE(
      ValidateSimBinaryEntries(std::vector<SimBinaryEntry>(kMaxSimBinaryEntries + 1, {"f", "k"}))
          .ok());
}

TEST(SimBinaryTest, EncodingInvalidEntriesNeverParses) {
  std::vector<SimBinaryEntry> many;
  for (uint32_t i = 0; i <= kMaxSimBinaryEntries; ++i) many.push_back({std::to_string(i), "k"});
  const std::vector<std::vector<SimBinaryEntry>> cases = {
      {},
      {{"", "k"}},
      {{"f", ""}},
      {{"f\n", "k"}},
      {{"f", std::string(257, 'k')}},
      {{"f", std::string(70000, 'k')}},  // length cut to 65535: still too long
      {{"f", "a"}, {"f", "b"}},
      many,
  };
  for (const auto& entries : cases) {
    EXPECT_FALSE(ValidateSimBinaryEntries(entries).ok());
    EXPECT_FALSE(ParseSimBinary(EncodeSimBinary(entries)).ok()) << entries.size();
  }
}

// Bounded fuzzing with a fixed seed: mutations and truncations of valid
// binaries, and pure random bytes. Parsing must never crash or read out of
// bounds (run under --config=asan too), and must either fail with
// InvalidArgument or return entries that re-encode to exactly the input.
TEST(SimBinaryTest, FuzzNeverCrashesAndAcceptsOnlyCanonicalBinaries) {
  std::mt19937_64 rng(0x5EED51B1u);
  auto below = [&rng](uint64_t n) { return n == 0 ? 0 : rng() % n; };

  const std::vector<std::string> seeds = {
      EncodeSimBinary({{"add_custom", "add_f16_2048"}}),
      EncodeSimBinary({{"a", "b"}, {"c", "d"}, {"e", "b"}}),
      EncodeSimBinary({{std::string(256, 'f'), "k"}, {"g", std::string(256, 'k')}}),
  };
  int accepted = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string bytes;
    const uint64_t kind = below(4);
    if (kind == 3) {
      // Pure random bytes, sometimes behind a valid magic and version.
      const size_t size = below(96);
      if (below(2) == 0) bytes = Bytes().Raw("ACLDSIMB").U32(1).str();
      for (size_t i = 0; i < size; ++i) bytes.push_back(static_cast<char>(below(256)));
    } else {
      bytes = seeds[below(seeds.size())];
      const uint64_t mutations = 1 + below(4);
      for (uint64_t m = 0; m < mutations && !bytes.empty(); ++m) {
        switch (below(5)) {
          case 0:  // flip a bit
            bytes[below(bytes.size())] ^= static_cast<char>(1u << below(8));
            break;
          case 1:  // overwrite a byte
            bytes[below(bytes.size())] = static_cast<char>(below(256));
            break;
          case 2:  // truncate
            bytes.resize(below(bytes.size()));
            break;
          case 3:  // insert a byte
            bytes.insert(bytes.begin() + below(bytes.size() + 1), static_cast<char>(below(256)));
            break;
          case 4:  // erase a byte
            bytes.erase(bytes.begin() + below(bytes.size()));
            break;
        }
      }
    }
    absl::StatusOr<std::vector<SimBinaryEntry>> parsed = ParseSimBinary(bytes);
    if (parsed.ok()) {
      ++accepted;
      ASSERT_TRUE(ValidateSimBinaryEntries(*parsed).ok());
      ASSERT_EQ(EncodeSimBinary(*parsed), bytes);
    } else {
      ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  // Some mutations (a changed name byte) keep a binary valid: the accept path
  // was exercised too.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace hal::sim
