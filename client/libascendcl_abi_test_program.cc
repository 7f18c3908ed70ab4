// A plain CANN-style program: compiled and linked by libascendcl_abi_test.sh
// with nothing but our include path and -lascendcl.
#include <cstdio>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS) return 1;
  uint32_t devices = 0;
  if (aclrtGetDeviceCount(&devices) != ACL_SUCCESS || devices == 0) return 2;
  if (aclrtSetDevice(0) != ACL_SUCCESS) return 3;
  int32_t device = -1;
  if (aclrtGetDevice(&device) != ACL_SUCCESS || device != 0) return 4;
  if (aclnnInit(nullptr) != ACLNN_SUCCESS || aclnnFinalize() != ACLNN_SUCCESS) return 5;
  if (aclFinalize() != ACL_SUCCESS) return 6;
  std::printf("ok: %u devices\n", devices);
  return 0;
}
