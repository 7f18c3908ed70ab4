// Helpers for the scenario client processes: a failed check prints
// "FAIL: ..." with the call's error message and makes the process exit 1.
#ifndef ACLD_TESTS_CHECK_H_
#define ACLD_TESTS_CHECK_H_

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>

#include "acl/acl.h"

namespace scenario {

inline int& Failures() {
  static int failures = 0;
  return failures;
}

inline void Check(bool condition, const std::string& what) {
  if (!condition) {
    std::printf("FAIL: %s\n", what.c_str());
    std::fflush(stdout);
    ++Failures();
  }
}

// Expects `call` to have returned `want`.
inline void CheckCode(aclError got, aclError want, const std::string& call) {
  if (got != want) {
    const char* message = aclGetRecentErrMsg();
    Check(false, call + " returned " + std::to_string(got) + ", want " + std::to_string(want) +
                     " (" + (message ? message : "no message") + ")");
  }
}

inline int ExitCode() { return Failures() == 0 ? 0 : 1; }

// A device pointer as a kernel argument.
inline uint64_t Addr(void* device_pointer) { return reinterpret_cast<uintptr_t>(device_pointer); }

// The usual start of a scenario: initialized, device 0 current.
inline void Setup() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice(0)");
}

// The usual end: finalized; the process's exit code.
inline int Teardown() {
  CheckCode(aclFinalize(), ACL_SUCCESS, "aclFinalize");
  return ExitCode();
}

// For a test that drives the scenario step by step: a line it waits for,
// and the test's next line on stdin.
inline void Say(const std::string& line) { std::cout << line << std::endl; }
inline std::string NextLine() {
  std::string line;
  std::getline(std::cin, line);
  return line;
}

}  // namespace scenario

#endif  // ACLD_TESTS_CHECK_H_
