#include "daemon/server/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"
#include "spdlog/logger.h"

namespace acld::server {
namespace {

std::string Read(const std::string& path) {
  std::ifstream file(path);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

TEST(LogFileTest, ItIsCreatedForAcldAloneAndWrittenThroughWhatWasOpened) {
  const std::string dir = TempDir();
  const std::string path = dir + "/acld.log", moved = dir + "/moved.log";
  absl::StatusOr<std::shared_ptr<spdlog::sinks::sink>> sink = OpenLogFile(path);
  ASSERT_TRUE(sink.ok()) << sink.status();
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  spdlog::logger logger("test", *sink);
  logger.info("first");
  // The name now leads elsewhere: the lines still go to the file opened.
  ASSERT_EQ(rename(path.c_str(), moved.c_str()), 0);
  std::ofstream(path) << "planted\n";
  logger.info("second");
  EXPECT_NE(Read(moved).find("second"), std::string::npos) << Read(moved);
  EXPECT_EQ(Read(path), "planted\n");
}

TEST(LogFileTest, ASymlinkAHardLinkOrAnotherUsersFileIsRefused) {
  const std::string dir = TempDir();
  const std::string target = dir + "/target";
  std::ofstream(target) << "untouched\n";
  const std::string symbolic = dir + "/symbolic.log", hard = dir + "/hard.log";
  ASSERT_EQ(symlink(target.c_str(), symbolic.c_str()), 0);
  ASSERT_EQ(link(target.c_str(), hard.c_str()), 0);
  EXPECT_FALSE(OpenLogFile(symbolic).ok());
  const absl::Status linked = OpenLogFile(hard).status();
  EXPECT_NE(linked.message().find("2 links"), std::string::npos) << linked;
  ASSERT_EQ(unlink(hard.c_str()), 0);
  if (geteuid() == 0) {
    ASSERT_EQ(chown(target.c_str(), 65534, 65534), 0);
    const absl::Status theirs = OpenLogFile(target).status();
    EXPECT_NE(theirs.message().find("belongs to uid 65534"), std::string::npos) << theirs;
  }
  EXPECT_EQ(Read(target), "untouched\n");
}

}  // namespace
}  // namespace acld::server
