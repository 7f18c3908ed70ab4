#include "proto/acl/random_task_shape.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

absl::Status Invalid(const std::string& message) {
  return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat("aclrtRandomNumAsync: ", message));
}

absl::Status CheckSize(uint32_t size, const char* name, uint64_t expected) {
  const bool fits = expected == 0 ? size >= 1 && size <= 8 : size == expected;
  if (fits) return absl::OkStatus();
  return Invalid(absl::StrCat(name, " has size ", size, "; it takes ",
                              expected == 0 ? std::string("1 to 8") : absl::StrCat(expected),
                              " bytes"));
}

}  // namespace

uint64_t RandomElementBytes(int32_t data_type) {
  switch (data_type) {
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_FLOAT:
      return 4;
    case ACL_INT64:
    case ACL_UINT64:
      return 8;
    default:
      return 0;
  }
}

std::optional<uint64_t> RandomResultBytes(int32_t function, int32_t data_type, uint64_t count) {
  const uint64_t element = RandomElementBytes(data_type);
  if (element == 0) return std::nullopt;
  if (function == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK) return count / 8 + (count % 8 != 0);
  if (count > UINT64_MAX / element) return std::nullopt;
  return count * element;
}

absl::Status CheckRandomTaskShape(const RandomTaskShape& shape) {
  if (shape.function < ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK ||
      shape.function > ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS) {
    return Invalid(absl::StrCat(shape.function, " is not an aclrtRandomNumFuncType"));
  }
  const uint64_t element = RandomElementBytes(shape.data_type);
  if (element == 0) {
    return Invalid(absl::StrCat("data type ", shape.data_type,
                                " is not drawn (int32, int64, uint32, uint64, fp16, bf16, fp32 are)"));
  }
  const bool is_float = shape.data_type == ACL_FLOAT || shape.data_type == ACL_FLOAT16 ||
                        shape.data_type == ACL_BF16;
  if (shape.function != ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS && !is_float) {
    return Invalid("normal distributions and dropout ratios are floats (fp16, bf16, fp32)");
  }
  absl::Status status = CheckSize(shape.seed_size, "randomSeed", 0);
  if (status.ok()) status = CheckSize(shape.count_size, "randomNum", 0);
  if (status.ok()) status = CheckSize(shape.first_size, "the distribution's first parameter", element);
  if (status.ok() && shape.function != ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK) {
    status = CheckSize(shape.second_size, "the distribution's second parameter", element);
  }
  return status;
}

}  // namespace acld
