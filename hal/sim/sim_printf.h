// The sim's device printf (the printf_i32 kernel, acl/acl_sim.h): formats
// one line of kernel output from a format the client chose. The format is
// hostile input, so this is not printf(3): it knows %d and %i (the value as
// int32), %u (as uint32), %x (hex), %% (a percent sign), and copies anything
// else as it stands; the result never exceeds `max_bytes`.
#ifndef ACLD_HAL_SIM_SIM_PRINTF_H_
#define ACLD_HAL_SIM_SIM_PRINTF_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hal::sim {

// Appends `format` with each conversion replaced by `value` (a conversion
// without a value prints as written) to `out`, stopping at `max_bytes` of
// `out`.
void AppendDevicePrintf(absl::string_view format, std::optional<int32_t> value, size_t max_bytes,
                        std::string& out);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_PRINTF_H_
