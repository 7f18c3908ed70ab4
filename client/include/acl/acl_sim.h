/*
 * acld client library — sim device extension (not part of CANN). See SPEC.md section 8.
 *
 * Built-in kernels. `args` is a packed struct of uint64_t fields; argsSize must equal
 * 8 * (number of fields). Block index b runs over [0, blockDim).
 *
 *   kernel             args (uint64 each)    effect
 *   add_one_u32        ptr                   block b: ((uint32_t *)ptr)[b] += 1
 *   spin_add_one_u32   ptr, micros           block b: occupy the stream for `micros` us per wave,
 *                                            then += 1 (a wave: the blocks that run at once, one
 *                                            per AI Core the core limits leave; 24 without limits)
 *   double_u32         ptr                   block b: ((uint32_t *)ptr)[b] *= 2
 *   axpy_f32           x, y, dst, alpha, n   dst[i] = x[i] + alpha * y[i] for n floats (alpha: the
 *                                            bits of a float in the field's low 32 bits)
 *   fill_u32           ptr, value, count     `count` uint32 from ptr set to `value`
 *   write_i32          ptr, value            *(int32_t *)ptr = value
 *   trap               (none)                the task fails with ACL_ERROR_RT_AICORE_EXCEPTION
 *   add_f16_2048       x, y, z               block b: 2048 FP16 elements from b * 4096 bytes,
 *                                            z = x + y (round to nearest even)
 *   printf_i32         values, fmt[32]       device printf: block b prints the format (up to 256
 *                                            bytes in the 32 fields after `values`, NUL-padded)
 *                                            with ((int32_t *)values)[b] for each %d/%i/%u/%x
 *                                            (values 0: no value; %% is a percent sign, any other
 *                                            text as written); the text reaches the launching
 *                                            process's stdout before the task finishes (at most
 *                                            64 KiB per launch)
 */
#ifndef ACLD_INC_ACL_ACL_SIM_H_
#define ACLD_INC_ACL_ACL_SIM_H_

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue a built-in kernel on `stream` (NULL = default stream). Unknown name, wrong argsSize
 * or blockDim == 0 -> ACL_ERROR_INVALID_PARAM. A bad device pointer in args fails the task. */
ACL_FUNC_VISIBILITY aclError aclsimLaunchKernel(const char *kernelName, uint32_t blockDim, const void *args,
                                                size_t argsSize, aclrtStream stream);

/* The built-in kernels: how many there are, and the name and number of uint64 argument fields of
 * the one at `index` (< count). The name stays valid until aclFinalize. */
ACL_FUNC_VISIBILITY aclError aclsimGetKernelCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclError aclsimGetKernel(uint32_t index, const char **name, uint32_t *argCount);

#ifdef __cplusplus
}
#endif

#endif /* ACLD_INC_ACL_ACL_SIM_H_ */
