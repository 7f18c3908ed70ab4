/*
 * acld client library — umbrella AscendCL header (like CANN's acl/acl.h).
 */
#ifndef ACLD_INC_ACL_ACL_H_
#define ACLD_INC_ACL_ACL_H_

#include "acl_base.h"
#include "acl_rt.h"
#include "acl_rt_allocator.h"
#include "acl_sim.h"

#endif /* ACLD_INC_ACL_ACL_H_ */
