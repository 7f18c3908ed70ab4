// C entry points of SPEC section 4: init, finalize, callback registries, errors.
#include "acl/acl_base.h"
#include "client/client_runtime.h"
#include "client/error_state.h"

using acl_client::ClientRuntime;
using acl_client::ReportStatus;

namespace {

acl_client::Lifecycle& lifecycle() { return ClientRuntime::Get().lifecycle(); }

}  // namespace

extern "C" {

aclError aclInit(const char* configPath) { return ReportStatus(lifecycle().Init(configPath)); }

aclError aclFinalize(void) { return ReportStatus(lifecycle().Finalize()); }

aclError aclFinalizeReference(uint64_t* refCount) {
  return ReportStatus(lifecycle().FinalizeReference(refCount));
}

aclError aclInitCallbackRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc,
                                 void* userData) {
  return ReportStatus(lifecycle().RegisterInitCallback(type, cbFunc, userData));
}

aclError aclInitCallbackUnRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc) {
  return ReportStatus(lifecycle().UnregisterInitCallback(type, cbFunc));
}

aclError aclFinalizeCallbackRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc,
                                     void* userData) {
  return ReportStatus(lifecycle().RegisterFinalizeCallback(type, cbFunc, userData));
}

aclError aclFinalizeCallbackUnRegister(aclRegisterCallbackType type,
                                       aclFinalizeCallbackFunc cbFunc) {
  return ReportStatus(lifecycle().UnregisterFinalizeCallback(type, cbFunc));
}

const char* aclGetRecentErrMsg(void) { return acl_client::TakeRecentErrorMessage(); }

}  // extern "C"
