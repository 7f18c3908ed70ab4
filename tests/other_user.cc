#include "tests/other_user.h"

#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace acld_test {

std::string CopyForAnotherUser(const std::string& dir, const std::string& runfile) {
  const auto overwrite = std::filesystem::copy_options::overwrite_existing;
  const std::string binary = dir + "/" + std::filesystem::path(runfile).filename().string();
  std::filesystem::copy_file(runfile, binary, overwrite);
  chmod(binary.c_str(), 0755);
  for (const auto& entry : std::filesystem::recursive_directory_iterator("_solib_k8")) {
    if (entry.path().filename() != "libascendcl.so") continue;
    const std::string library = dir + "/libascendcl.so";
    std::filesystem::copy_file(entry.path(), library, overwrite);
    chmod(library.c_str(), 0755);
    break;
  }
  return binary;
}

int RunAsUser(uid_t uid, const std::vector<std::string>& argv, const std::string& library_dir,
              const std::string& acld_address, const std::vector<std::string>& environment) {
  const pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
      _exit(90);
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const std::string address = "ACLD_ADDRESS=" + acld_address;
    const std::string libraries = "LD_LIBRARY_PATH=" + library_dir;
    std::vector<char*> env = {const_cast<char*>(address.c_str()),
                              const_cast<char*>(libraries.c_str())};
    for (const std::string& entry : environment) env.push_back(const_cast<char*>(entry.c_str()));
    env.push_back(nullptr);
    execve(args[0], args.data(), env.data());
    _exit(91);
  }
  int status = 0;
  for (int waited = 0; waited < 600; ++waited) {
    if (waitpid(child, &status, WNOHANG) == child) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  return -1;
}

}  // namespace acld_test
