#include "client/kernel_args.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

absl::Status Invalid(const std::string& message) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, message);
}

absl::Status TooLate(const char* api, const char* after) {
  return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         absl::StrCat(api, ": not allowed after ", after));
}

// The calling thread's list (0: none yet).
thread_local uint64_t thread_list = 0;

}  // namespace

absl::StatusOr<size_t> KernelArgs::AddSlot(size_t size, bool placeholder) {
  const char* api = placeholder ? "aclrtKernelArgsAppendPlaceHolder" : "aclrtKernelArgsAppend";
  if (finalized_) return TooLate(api, "aclrtKernelArgsFinalize");
  if (buffers_taken_) return TooLate(api, "aclrtKernelArgsGetPlaceHolderBuffer");
  if (params_.size() >= acld::kMaxPlaceholders) {
    return Invalid(absl::StrCat(api, ": at most ", acld::kMaxPlaceholders, " parameters"));
  }
  const uint64_t offset = (block_.size() + 7) / 8 * 8;
  if (size > acld::kMaxKernelArgsBytes || offset + size > acld::kMaxKernelArgsBytes) {
    return Invalid(absl::StrCat(api, ": the arguments would pass ", acld::kMaxKernelArgsBytes,
                                " bytes"));
  }
  block_.resize(offset + size, '\0');
  Param param;
  param.offset = offset;
  param.placeholder = placeholder;
  params_.push_back(std::move(param));
  return params_.size() - 1;
}

absl::StatusOr<size_t> KernelArgs::Append(const void* param, size_t size) {
  if (param == nullptr) return Invalid("aclrtKernelArgsAppend: param is NULL");
  if (size == 0) return Invalid("aclrtKernelArgsAppend: paramSize must be > 0");
  absl::StatusOr<size_t> index = AddSlot(size, false);
  if (!index.ok()) return index;
  std::memcpy(block_.data() + params_[*index].offset, param, size);
  return index;
}

absl::StatusOr<size_t> KernelArgs::AppendPlaceholder() { return AddSlot(8, true); }

absl::StatusOr<void*> KernelArgs::PlaceholderBuffer(size_t param, size_t size) {
  const char* api = "aclrtKernelArgsGetPlaceHolderBuffer";
  if (finalized_) return TooLate(api, "aclrtKernelArgsFinalize");
  if (param >= params_.size() || !params_[param].placeholder) {
    return Invalid(absl::StrCat(api, ": paramHandle is not a placeholder of this list"));
  }
  if (size == 0 || size > acld::kMaxKernelArgsBytes) {
    return Invalid(absl::StrCat(api, ": dataSize must be 1 .. ", acld::kMaxKernelArgsBytes));
  }
  Param& slot = params_[param];
  slot.data = std::make_unique<char[]>(size);
  std::memset(slot.data.get(), 0, size);
  slot.data_size = size;
  buffers_taken_ = true;
  return static_cast<void*>(slot.data.get());
}

absl::Status KernelArgs::Finalize() {
  for (const Param& param : params_) {
    if (param.placeholder && param.data == nullptr) {
      return Invalid(
          "aclrtKernelArgsFinalize: a placeholder has no data (aclrtKernelArgsGetPlaceHolderBuffer)");
    }
  }
  finalized_ = true;
  return absl::OkStatus();
}

absl::StatusOr<acld::FunctionLaunch> KernelArgs::ToLaunch(uint32_t block_dim) const {
  if (!finalized_) {
    return Invalid("kernel launch: the argument list was not finalized (aclrtKernelArgsFinalize)");
  }
  acld::FunctionLaunch launch;
  launch.function = function_;
  launch.block_dim = block_dim;
  launch.args = block_;
  for (const Param& param : params_) {
    if (!param.placeholder) continue;
    launch.placeholders.push_back(
        acld::Placeholder{param.offset, std::string(param.data.get(), param.data_size)});
  }
  return launch;
}

KernelArgsTable& KernelArgsTable::Get() {
  static KernelArgsTable* table = new KernelArgsTable;  // used until the process ends
  return *table;
}

void* KernelArgsTable::Init(uint64_t function) {
  absl::MutexLock lock(&mu_);
  if (thread_list != 0) lists_.erase(thread_list);
  thread_list = next_id_++;
  lists_[thread_list] = std::make_shared<KernelArgs>(function);
  return reinterpret_cast<void*>(static_cast<uintptr_t>(thread_list));
}

absl::StatusOr<std::shared_ptr<KernelArgs>> KernelArgsTable::Find(const void* handle,
                                                                  const char* api) {
  absl::MutexLock lock(&mu_);
  auto it = lists_.find(reinterpret_cast<uintptr_t>(handle));
  if (it == lists_.end()) {
    return Invalid(absl::StrCat(api, ": argsHandle is not a live argument list (from "
                                     "aclrtKernelArgsInit, not replaced by a later one)"));
  }
  return it->second;
}

}  // namespace acl_client
