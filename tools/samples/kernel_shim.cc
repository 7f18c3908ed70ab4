// The kernel entry points of the hicann/runtime samples (their
// kernel_func/kernel_ops.h, kernel_func/kernel_add.h and 0_quickstart/4_custom_kernel_launch), written
// for acld's sim: each launches the sim built-in kernel that has the same
// effect on device memory (acl/acl_sim.h). Built by ascendc.cmake in place of
// the samples' Ascend C sources; the samples themselves are unchanged.
// Their device printf becomes the sim's printf_i32, whose text reaches the
// calling process's stdout.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_sim.h"

namespace {

aclError Launch(const char* kernel, uint32_t block_dim, const uint64_t* args, size_t count,
                void* stream) {
  return aclsimLaunchKernel(kernel, block_dim, args, count * sizeof(uint64_t),
                            static_cast<aclrtStream>(stream));
}

uint64_t Addr(const void* device_pointer) { return reinterpret_cast<uintptr_t>(device_pointer); }

// Each block prints `format` with its own int32 from values[block] (none: as it stands).
aclError Print(const char* format, const void* values, uint32_t block_dim, void* stream) {
  std::vector<uint64_t> args(33, 0);
  args[0] = Addr(values);
  std::memcpy(&args[1], format, std::min<size_t>(std::strlen(format), 256));
  return Launch("printf_i32", block_dim, args.data(), args.size(), stream);
}

// LongOP "models a long task": the sim holds its stream this long.
constexpr uint64_t kLongOpMicros = 200000;

}  // namespace

// x[block] += 1
void EasyOP(uint32_t blockDim, void* stream, uint32_t* x) {
  const uint64_t args[] = {Addr(x)};
  Launch("add_one_u32", blockDim, args, 1, stream);
}

// The kernel traps: its task fails with ACL_ERROR_RT_AICORE_EXCEPTION.
void ErrorOP(uint32_t blockDim, void* stream) { Launch("trap", blockDim, nullptr, 0, stream); }

// A long computation whose result adds one to x[block].
void LongOP(uint32_t blockDim, void* stream, uint32_t* x) {
  const uint64_t args[] = {Addr(x), kLongOpMicros};
  Launch("spin_add_one_u32", blockDim, args, 2, stream);
}

// x[block] *= 2
void ShortOP(uint32_t blockDim, void* stream, uint32_t* x) {
  const uint64_t args[] = {Addr(x)};
  Launch("double_u32", blockDim, args, 1, stream);
}

// devPtr[block] = value, then each block prints "Source data: <value>".
void WriteDo(uint32_t blockDim, void* stream, int* devPtr, int value) {
  for (uint32_t block = 0; block < blockDim; ++block) {
    const uint64_t args[] = {Addr(devPtr + block), static_cast<uint64_t>(value)};
    Launch("write_i32", 1, args, 2, stream);
  }
  Print("Source data: %d\n", devPtr, blockDim, stream);
}

// Each block prints "Destination data: <devPtr[block]>".
void ReadDo(uint32_t blockDim, void* stream, int* devPtr) {
  Print("Destination data: %d\n", devPtr, blockDim, stream);
}

void PrintDo(uint32_t blockDim, void* stream) { Print("Hello World\n", nullptr, blockDim, stream); }

// dst[i] = srcA[i] + alpha * srcB[i] for elementCount floats.
int32_t VectorAddDo(uint32_t blockDim, void* stream, float* srcA, float* srcB, float* dst,
                    float alpha, uint32_t elementCount) {
  uint32_t alpha_bits;
  std::memcpy(&alpha_bits, &alpha, sizeof(alpha_bits));
  const uint64_t args[] = {Addr(srcA), Addr(srcB), Addr(dst), alpha_bits, elementCount};
  return static_cast<int32_t>(Launch("axpy_f32", blockDim, args, 5, stream));
}

// dst[i] = srcA[i] + srcB[i] for totalSize floats (kernel_func/kernel_add.h).
void AddDo(uint32_t blockDim, void* stream, float* srcA, float* srcB, float* dst,
           uint32_t totalSize) {
  VectorAddDo(blockDim, stream, srcA, srcB, dst, 1.0f, totalSize);
}
