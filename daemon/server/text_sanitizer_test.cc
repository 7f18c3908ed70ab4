#include "daemon/server/text_sanitizer.h"

#include <string>

#include "gtest/gtest.h"

namespace acld::server {
namespace {

TEST(TextSanitizerTest, PrintableAsciiIsKept) {
  EXPECT_EQ(SanitizeText("python3 train.py --lr=0.1"), "python3 train.py --lr=0.1");
  EXPECT_EQ(SanitizeText(""), "");
}

TEST(TextSanitizerTest, ControlAndNonAsciiBytesAreEscaped) {
  EXPECT_EQ(SanitizeText("a\nb\rc\td"), "a\\x0ab\\x0dc\\x09d");
  EXPECT_EQ(SanitizeText("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(SanitizeText(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(SanitizeText("\x7f\xff\xc3\xa9"), "\\x7f\\xff\\xc3\\xa9");
  // A backslash is escaped too, so that "\x0a" typed by a client is not
  // mistaken for an escaped newline.
  EXPECT_EQ(SanitizeText("\\x0a"), "\\\\x0a");
}

TEST(TextSanitizerTest, LongTextIsCutWithoutSplittingAnEscape) {
  EXPECT_EQ(SanitizeText("abcde", 5), "abcde");
  EXPECT_EQ(SanitizeText("abcdef", 5), "ab...");
  EXPECT_EQ(SanitizeText("a\n\n\n", 8), "a\\x0a...");
  EXPECT_EQ(SanitizeText("a\n\n\n", 7), "a...");  // "a\x0a..." would need 8
  EXPECT_EQ(SanitizeText("ab\n", 6), "ab\\x0a");
  const std::string huge(5 << 20, '\n');
  const std::string safe = SanitizeText(huge, 256);
  EXPECT_LE(safe.size(), 256u);
  EXPECT_EQ(safe.substr(safe.size() - 3), "...");
  EXPECT_EQ(safe.find('\n'), std::string::npos);
  EXPECT_EQ(SanitizeText("abcdef", 2), "");
}

}  // namespace
}  // namespace acld::server
