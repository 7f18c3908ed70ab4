#include "hal/sim/sim_printf.h"

#include "absl/strings/str_cat.h"

namespace hal::sim {

void AppendDevicePrintf(absl::string_view format, std::optional<int32_t> value, size_t max_bytes,
                        std::string& out) {
  auto append = [&](absl::string_view piece) {
    if (out.size() >= max_bytes) return;
    const absl::string_view part = piece.substr(0, max_bytes - out.size());
    out.append(part.data(), part.size());
  };
  for (size_t i = 0; i < format.size() && out.size() < max_bytes; ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      append(format.substr(i, 1));
      continue;
    }
    const char conversion = format[i + 1];
    if (conversion == '%') {
      append("%");
      ++i;
      continue;
    }
    const bool known = conversion == 'd' || conversion == 'i' || conversion == 'u' ||
                       conversion == 'x';
    if (!known || !value.has_value()) {
      append(format.substr(i, 1));  // the '%' as written; the next character follows
      continue;
    }
    switch (conversion) {
      case 'u':
        append(absl::StrCat(static_cast<uint32_t>(*value)));
        break;
      case 'x':
        append(absl::StrCat(absl::Hex(static_cast<uint32_t>(*value))));
        break;
      default:
        append(absl::StrCat(*value));
    }
    ++i;
  }
}

}  // namespace hal::sim
