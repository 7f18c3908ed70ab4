/*
 * acld client library — aclnn base status codes and init/finalize. See SPEC.md sections 3 and 4.
 */
#ifndef ACLD_INC_ACLNN_ACLNN_BASE_H_
#define ACLD_INC_ACLNN_ACLNN_BASE_H_

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;

#ifndef ACLNN_SUCCESS
#define ACLNN_SUCCESS 0
#endif
#ifndef ACLNN_ERR_PARAM_NULLPTR
#define ACLNN_ERR_PARAM_NULLPTR 161001
#endif
#ifndef ACLNN_ERR_PARAM_INVALID
#define ACLNN_ERR_PARAM_INVALID 161002
#endif
#ifndef ACLNN_ERR_RUNTIME_ERROR
#define ACLNN_ERR_RUNTIME_ERROR 361001
#endif
#ifndef ACLNN_ERR_INNER
#define ACLNN_ERR_INNER 561000
#endif

/* configPath may be NULL or "" (empty config); file errors map to ACLNN_ERR_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
/* Idempotent; always ACLNN_SUCCESS. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLD_INC_ACLNN_ACLNN_BASE_H_ */
