// aclDataTypeSize and the aclFloat16 conversions: pure functions, which work
// with or without aclInit and a daemon.
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/api_support.h"
#include "client/float16.h"
#include "proto/acl/acl_status.h"

extern "C" {

size_t aclDataTypeSize(aclDataType dataType) {
  switch (acl_client::RawEnum(dataType)) {
    case ACL_STRING:
    case ACL_DT_UNDEFINED:
      return 0;  // no fixed size
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
    // Types narrower than a byte count one byte, as CANN counts ACL_INT4.
    case ACL_INT4:
    case ACL_UINT1:
    case ACL_FLOAT6_E3M2:
    case ACL_FLOAT6_E2M3:
    case ACL_FLOAT4_E2M1:
    case ACL_FLOAT4_E1M2:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
      return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
      return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    default:
      acl_client::ReportStatus(acld::AclStatus(
          ACL_ERROR_INVALID_PARAM, absl::StrCat("aclDataTypeSize: ", acl_client::RawEnum(dataType),
                                                " is not an aclDataType")));
      return 0;
  }
}

float aclFloat16ToFloat(aclFloat16 value) { return acl_client::HalfToFloat(value); }

aclFloat16 aclFloatToFloat16(float value) { return acl_client::FloatToHalf(value); }

}  // extern "C"
