#include "daemon/server/process_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace acld::server {
namespace {

// A child that runs `argv` until killed.
pid_t Spawn(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// The command of `pid` once it has exec-ed (fork copies the parent's first).
std::string CommandAfterExec(pid_t pid, const std::string& expected_start, size_t max_bytes) {
  std::string command;
  for (int i = 0; i < 500; ++i) {
    command = ProcessCommand(pid, max_bytes);
    if (command.rfind(expected_start, 0) == 0) break;
    usleep(10000);
  }
  return command;
}

TEST(ProcessCommandTest, ArgumentsJoinedBySpaces) {
  const pid_t pid = Spawn({"/bin/sleep", "30"});
  EXPECT_EQ(CommandAfterExec(pid, "/bin/sleep", 256), "/bin/sleep 30");
  Reap(pid);
}

TEST(ProcessCommandTest, HostileArgumentsAreEscapedAndBounded) {
  const std::string huge(100000, 'A');  // one argument may be 128 KiB at most
  // The shell keeps running (two commands) with the extra arguments as $0, $1.
  const pid_t pid = Spawn({"/bin/sh", "-c", "sleep 30; true", "x\n\x1b[2J", huge});
  const std::string command = CommandAfterExec(pid, "/bin/sh", 256);
  EXPECT_LE(command.size(), 256u);
  EXPECT_EQ(command.rfind("/bin/sh -c sleep 30; true x\\x0a\\x1b[2J AAAA", 0), 0u) << command;
  ASSERT_GE(command.size(), 3u);
  EXPECT_EQ(command.substr(command.size() - 3), "...");
  Reap(pid);
}

TEST(ProcessCommandTest, GoneProcessHasNoCommand) {
  const pid_t pid = Spawn({"/bin/true"});
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(ProcessCommand(pid), "");
  EXPECT_EQ(ProcessCommand(0), "");
  EXPECT_EQ(ProcessCommand(-5), "");
  EXPECT_EQ(ProcessName(pid), "");
  EXPECT_EQ(ProcessName(0), "");
}

TEST(ProcessCommandTest, ANameIsTheKernelsShortNameWithoutItsNewline) {
  const pid_t pid = Spawn({"/bin/sleep", "30"});
  std::string name;
  for (int i = 0; i < 500 && name != "sleep"; ++i) {
    name = ProcessName(pid);
    if (name != "sleep") usleep(10000);
  }
  EXPECT_EQ(name, "sleep");
  Reap(pid);
}

}  // namespace
}  // namespace acld::server
