#include "hal/sim/sim_reduce.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "hal/sim/sim_float_environment.h"
#include "hal/sim/sim_floats.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {
namespace {

// The size of one element of `data_type`, or 0 when the sim does not reduce it.
uint64_t ElementBytes(int32_t data_type) {
  switch (data_type) {
    case ACL_INT8:
      return 1;
    case ACL_INT16:
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_FLOAT:
      return 4;
    default:
      return 0;
  }
}

// One element's reduction, in the arithmetic of `Value`.
template <typename Value>
Value Combine(Value a, Value b, int32_t kind) {
  if constexpr (std::is_floating_point_v<Value>) {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX) return std::fmax(a, b);
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN) return std::fmin(a, b);
    return a + b;
  } else {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX) return a > b ? a : b;
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN) return a < b ? a : b;
    // Wraps around: the sum is taken unsigned, where overflow is defined.
    using Unsigned = std::make_unsigned_t<Value>;
    return static_cast<Value>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
  }
}

// Reduces elements stored as `Stored`, computed as `Value` (decode/encode
// convert between them: the narrow floats).
template <typename Stored, typename Value, typename Decode, typename Encode>
void ReduceAs(uint8_t* dst, const uint8_t* src, uint64_t count, int32_t kind, Decode decode,
              Encode encode) {
  for (uint64_t offset = 0; offset < count; offset += sizeof(Stored)) {
    Stored a, b;
    std::memcpy(&a, dst + offset, sizeof(a));
    std::memcpy(&b, src + offset, sizeof(b));
    const Stored result = encode(Combine<Value>(decode(a), decode(b), kind));
    std::memcpy(dst + offset, &result, sizeof(result));
  }
}

template <typename Value>
void ReduceNative(uint8_t* dst, const uint8_t* src, uint64_t count, int32_t kind) {
  auto same = [](Value v) { return v; };
  ReduceAs<Value, Value>(dst, src, count, kind, same, same);
}

}  // namespace

absl::Status CheckReduction(int32_t kind, int32_t data_type, uint64_t count) {
  if (kind != ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM && kind != ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX &&
      kind != ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN) {
    return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           absl::StrCat("the sim does not reduce with kind ", kind,
                                        " (it does SUM, MAX and MIN)"));
  }
  const uint64_t element = ElementBytes(data_type);
  if (element == 0) {
    return acld::AclStatus(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        absl::StrCat("the sim does not reduce data type ", data_type,
                     " (it does int8, int16, int32, uint32, fp16, fp32 and bf16)"));
  }
  if (count % element != 0) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("count ", count, " is not a whole number of ", element,
                                        "-byte elements"));
  }
  return absl::OkStatus();
}

void ReduceBytes(uint8_t* dst, const uint8_t* src, uint64_t count, int32_t kind,
                 int32_t data_type) {
  switch (data_type) {
    case ACL_INT8:
      return ReduceNative<int8_t>(dst, src, count, kind);
    case ACL_INT16:
      return ReduceNative<int16_t>(dst, src, count, kind);
    case ACL_INT32:
      return ReduceNative<int32_t>(dst, src, count, kind);
    case ACL_UINT32:
      return ReduceNative<uint32_t>(dst, src, count, kind);
    // Float results go through the task's float environment (saturation,
    // overflow detection).
    case ACL_FLOAT:
      return ReduceAs<float, float>(
          dst, src, count, kind, [](float v) { return v; }, FloatEnvironment::Float);
    case ACL_FLOAT16:
      // Two halves combine exactly in a double: one rounding to half.
      return ReduceAs<uint16_t, double>(dst, src, count, kind, HalfToDouble, [](double v) {
        return FloatEnvironment::Half(DoubleToHalf(v));
      });
    case ACL_BF16:
      // Two bfloat16 values sum in a float either exactly or far below half
      // a bfloat16 unit: rounding that float to bfloat16 is the correct one.
      return ReduceAs<uint16_t, float>(dst, src, count, kind, Bf16ToFloat, [](float v) {
        return FloatEnvironment::Bf16(FloatToBf16(v));
      });
  }
}

}  // namespace hal::sim
