#include "daemon/server/text_sanitizer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

namespace acld::server {
namespace {

constexpr absl::string_view kCut = "...";

// Appends the safe form of byte `c`.
void AppendSafe(unsigned char c, std::string& out) {
  if (c == '\\') {
    out += "\\\\";
  } else if (c >= 0x20 && c < 0x7f) {
    out += static_cast<char>(c);
  } else {
    absl::StrAppendFormat(&out, "\\x%02x", c);
  }
}

}  // namespace

std::string SanitizeText(absl::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 4);
  // Where each byte's safe form ends, so that a cut never splits an escape.
  std::vector<size_t> ends;
  for (size_t i = 0; i < text.size(); ++i) {
    AppendSafe(static_cast<unsigned char>(text[i]), out);
    ends.push_back(out.size());
    if (out.size() > max_bytes) break;
  }
  if (out.size() <= max_bytes) return out;
  // Too long: keep whole escapes that leave room for "...".
  size_t keep = 0;
  for (size_t end : ends) {
    if (end + kCut.size() > max_bytes) break;
    keep = end;
  }
  out.resize(keep);
  if (keep + kCut.size() <= max_bytes) out.append(kCut.data(), kCut.size());
  return out;
}

}  // namespace acld::server
