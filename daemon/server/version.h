#ifndef ACLD_DAEMON_SERVER_VERSION_H_
#define ACLD_DAEMON_SERVER_VERSION_H_

namespace acld::server {

// acld's own release; the AscendCL API version is in acl/acl_base.h.
inline constexpr char kAcldVersion[] = "0.1.0";

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_VERSION_H_
