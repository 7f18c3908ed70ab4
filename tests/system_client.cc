// A client process for the version and data-type functions
// (device_integration_test.cc, SystemInfoTest):
//
//   system_client info   checks aclsysGetVersionStr/Num, aclDataTypeSize and
//                        the aclFloat16 conversions, before aclInit and after
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "acl/acl.h"
#include "tests/check.h"

namespace {

using scenario::Check;
using scenario::CheckCode;

void CheckVersions(const std::string& when) {
  char runtime[] = "runtime";
  char cann[] = "cann";
  char version[ACL_PKG_VERSION_MAX_SIZE] = {};
  CheckCode(aclsysGetVersionStr(runtime, version), ACL_SUCCESS, "aclsysGetVersionStr " + when);
  Check(std::string(version) == "9.1.0", "runtime version string " + when + ": " + version);
  int32_t number = 0;
  CheckCode(aclsysGetVersionNum(runtime, &number), ACL_SUCCESS, "aclsysGetVersionNum " + when);
  Check(number == 90100000, "runtime version number " + when + ": " + std::to_string(number));
  number = 0;
  CheckCode(aclsysGetVersionNum(cann, &number), ACL_SUCCESS, "aclsysGetVersionNum(cann)");
  Check(number == 90100000, "cann version number: " + std::to_string(number));

  char driver[] = "driver";
  CheckCode(aclsysGetVersionStr(driver, version), ACL_ERROR_INVALID_FILE, "version of driver");
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr && std::strstr(message, "\"driver\"") != nullptr,
        std::string("the message names the package: ") + (message ? message : "(none)"));
  CheckCode(aclsysGetVersionNum(nullptr, &number), ACL_ERROR_INVALID_PARAM, "null pkgName");
  CheckCode(aclsysGetVersionNum(runtime, nullptr), ACL_ERROR_INVALID_PARAM, "null versionNum");
  CheckCode(aclsysGetVersionStr(runtime, nullptr), ACL_ERROR_INVALID_PARAM, "null versionStr");
  // A name far longer than any package's is refused without reading past it.
  std::string long_name(100000, 'x');
  CheckCode(aclsysGetVersionNum(long_name.data(), &number), ACL_ERROR_INVALID_FILE, "long name");
}

void CheckDataTypes() {
  const struct {
    aclDataType type;
    size_t size;
  } sizes[] = {
      {ACL_FLOAT, 4},       {ACL_FLOAT16, 2},      {ACL_INT8, 1},        {ACL_INT32, 4},
      {ACL_UINT8, 1},       {ACL_INT16, 2},        {ACL_UINT16, 2},      {ACL_UINT32, 4},
      {ACL_INT64, 8},       {ACL_UINT64, 8},       {ACL_DOUBLE, 8},      {ACL_BOOL, 1},
      {ACL_STRING, 0},      {ACL_COMPLEX64, 8},    {ACL_COMPLEX128, 16}, {ACL_BF16, 2},
      {ACL_INT4, 1},        {ACL_UINT1, 1},        {ACL_COMPLEX32, 4},   {ACL_HIFLOAT8, 1},
      {ACL_FLOAT8_E5M2, 1}, {ACL_FLOAT8_E4M3FN, 1}, {ACL_FLOAT8_E8M0, 1}, {ACL_FLOAT4_E2M1, 1},
      {ACL_DT_UNDEFINED, 0},
  };
  for (const auto& entry : sizes) {
    Check(aclDataTypeSize(entry.type) == entry.size,
          "aclDataTypeSize(" + std::to_string(entry.type) + ") = " +
              std::to_string(aclDataTypeSize(entry.type)));
  }
  Check(aclDataTypeSize(static_cast<aclDataType>(12345)) == 0, "an unknown type has no size");
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr && std::strstr(message, "12345") != nullptr,
        std::string("the unknown type is named: ") + (message ? message : "(none)"));

  Check(aclFloatToFloat16(1.5f) == 0x3E00, "1.5 as FP16");
  Check(aclFloat16ToFloat(0x3E00) == 1.5f, "FP16 1.5 as float");
  Check(aclFloat16ToFloat(aclFloatToFloat16(-0.25f)) == -0.25f, "-0.25 both ways");
  Check(aclFloatToFloat16(std::numeric_limits<float>::infinity()) == 0x7BFF, "Inf saturates");
  Check(aclFloatToFloat16(-std::numeric_limits<float>::infinity()) == 0xFBFF, "-Inf saturates");
  Check(aclFloatToFloat16(std::nanf("")) == 0x7BFF, "NaN saturates");
  Check(aclFloat16ToFloat(0x7C00) == 65536.0f, "FP16 Inf reads as 65536");
  Check(aclFloat16ToFloat(0x7E00) == 98304.0f, "FP16 NaN reads as 98304");
}

int Info() {
  CheckVersions("before aclInit");
  CheckDataTypes();
  scenario::Setup();
  CheckVersions("after aclInit");
  CheckDataTypes();
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "info") return Info();
  std::fprintf(stderr, "usage: %s info\n", argv[0]);
  return 2;
}
