// Playing a second user in the integration tests: a client binary copied where
// that user can run it, and run with setresuid.
#ifndef ACLD_TESTS_OTHER_USER_H_
#define ACLD_TESTS_OTHER_USER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace acld_test {

// A uid no test process runs as.
constexpr uid_t kOtherUser = 65534;  // nobody

// Copies `runfile` (a test binary under the runfiles, which are under /root)
// and libascendcl.so into `dir`, where another user can run them; returns the
// copied binary.
std::string CopyForAnotherUser(const std::string& dir, const std::string& runfile);

// Runs `argv` as `uid`: forks, drops the child to that user with setresuid,
// and execs it against acld at `acld_address` with the libraries of
// `library_dir` (and `environment`'s NAME=VALUE entries). Returns the exit
// code (-1: killed after 60 s).
int RunAsUser(uid_t uid, const std::vector<std::string>& argv, const std::string& library_dir,
              const std::string& acld_address, const std::vector<std::string>& environment = {});

}  // namespace acld_test

#endif  // ACLD_TESTS_OTHER_USER_H_
