// The sim device's built-in kernels (SPEC section 8).
//
//   add_one_u32       ptr               block b: ((uint32_t*)ptr)[b] += 1
//   spin_add_one_u32  ptr, micros       occupy the stream for micros µs, then as add_one_u32
//   fill_u32          ptr, value, count count uint32 from ptr set to value
//   write_i32         ptr, value        *(int32_t*)ptr = value
//   trap              (none)            the task fails (an AI core exception)
//   add_f16_2048      x, y, z           block b: for i in [2048*b, 2048*b + 2048):
//                                       ((half*)z)[i] = ((half*)x)[i] + ((half*)y)[i]
//
// Arguments are 64-bit fields, device pointers first. add_f16_2048 is the
// 0_launch_kernel sample's add_custom(x, y, z) (docs/sim-binary.md): IEEE
// binary16 little-endian elements, sums rounded to nearest (ties to even),
// overflow to infinity; it touches block_dim * 4096 bytes of each of x, y, z
// (z may equal x or y). Programs reach it through a sim binary that maps
// their function name to it (sim_binary.h).
#ifndef ACLD_HAL_SIM_SIM_KERNELS_H_
#define ACLD_HAL_SIM_SIM_KERNELS_H_

#include <map>
#include <memory>
#include <string>

#include "hal/sim/sim_kernel.h"

namespace hal::sim {

// A `trap` failure: the status the core reports as ACL_ERROR_RT_AICORE_EXCEPTION.
absl::Status TrapStatus();
bool IsTrap(const absl::Status& status);

// Every built-in kernel by name.
const std::map<std::string, std::unique_ptr<Kernel>>& BuiltinKernels();

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_KERNELS_H_
