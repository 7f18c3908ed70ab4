// The sim device's built-in kernels (SPEC section 8).
//
//   add_one_u32       ptr               block b: ((uint32_t*)ptr)[b] += 1
//   spin_add_one_u32  ptr, micros       occupy the stream for micros µs, then as add_one_u32
//   fill_u32          ptr, value, count count uint32 from ptr set to value
//   write_i32         ptr, value        *(int32_t*)ptr = value
//   trap              (none)            the task fails (an AI core exception)
#ifndef ACLD_HAL_SIM_SIM_KERNELS_H_
#define ACLD_HAL_SIM_SIM_KERNELS_H_

#include <map>
#include <memory>
#include <string>

#include "hal/kernel.h"

namespace hal::sim {

// A `trap` failure: the status the core reports as ACL_ERROR_RT_AICORE_EXCEPTION.
absl::Status TrapStatus();
bool IsTrap(const absl::Status& status);

// Every built-in kernel by name.
const std::map<std::string, std::unique_ptr<Kernel>>& BuiltinKernels();

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_KERNELS_H_
