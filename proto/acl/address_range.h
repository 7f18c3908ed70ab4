// A device's window of addresses, as the client learns it at session open.
//
// The HAL hands these out (hal/memory.h names this type hal::AddressRange) and
// the client tells device from host pointers with them (ACL_MEMCPY_DEFAULT),
// so it is a value both sides of the wire hold. It lives here, in the
// contract, rather than in a header-only HAL target because the client must
// not depend on //hal at all: one plain struct in the package both sides
// already share is the smallest thing that keeps a single definition.
#ifndef ACLD_PROTO_ACL_ADDRESS_RANGE_H_
#define ACLD_PROTO_ACL_ADDRESS_RANGE_H_

#include <cstdint>

namespace acld {

struct AddressRange {
  uint64_t begin = 0;  // first address
  uint64_t end = 0;    // one past the last

  bool Contains(uint64_t address) const { return address >= begin && address < end; }
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_ADDRESS_RANGE_H_
