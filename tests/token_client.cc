// Opens a session by hand (tests/raw_session.h) with a given identity token,
// as a process that got hold of another's token would:
//
//   token_client SOCKET TOKEN|own opened|refused[:TEXT]
//
// SOCKET is the runtime socket; `own` fetches a token of this process's own
// from SOCKET.peer. Prints "opened" or "refused <acld's message>" and exits
// 0 when that is what the last word expected (with "refused:TEXT", also that
// the message holds TEXT). Links no libascendcl: only the protocol.
#include <cstdio>
#include <string>

#include "tests/raw_session.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: token_client SOCKET TOKEN|own opened|refused[:TEXT]\n");
    return 2;
  }
  const std::string token = argv[2];
  acld_test::RawSession session(argv[1], true, "", token == "own" ? "" : token);
  const std::string outcome = session.opened() ? "opened" : "refused";
  std::printf("%s %s\n", outcome.c_str(), session.refusal().c_str());
  const std::string expected = argv[3];
  const size_t colon = expected.find(':');
  if (expected.substr(0, colon) != outcome) return 1;
  return colon == std::string::npos ||
                 session.refusal().find(expected.substr(colon + 1)) != std::string::npos
             ? 0
             : 1;
}
