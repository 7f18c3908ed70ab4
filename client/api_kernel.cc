// C entry points for kernels (docs/api-compat.md): binaries, functions,
// argument lists and launches. A binary file is read here, in the process,
// never by the daemon; the daemon gets its bytes and parses them through the
// device's backend.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "client/kernel_args.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::HandleId;
using acl_client::KernelArgs;
using acl_client::KernelArgsTable;
using acl_client::NullArgument;
using acl_client::ResolveStream;
using acl_client::ToHandle;
using acl_client::Transport;

namespace {

// The largest binary file the library reads; the daemon bounds what a
// process may hold loaded (--max_binary_bytes_per_session).
constexpr uint64_t kMaxBinaryFileBytes = 1ull << 30;

absl::Status Invalid(const std::string& message) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, message);
}

absl::Status CheckLoadOptions(const aclrtBinaryLoadOptions* options, bool from_file,
                              const char* api) {
  if (options == nullptr) return absl::OkStatus();
  if (options->numOpt > 0 && options->options == nullptr) {
    return Invalid(absl::StrCat(api, ": options->options is NULL with numOpt ", options->numOpt));
  }
  for (size_t i = 0; i < options->numOpt; ++i) {
    const aclrtBinaryLoadOption& option = options->options[i];
    switch (acl_client::RawEnum(option.type)) {
      case ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD:
        if (option.value.isLazyLoad > 1) {
          return Invalid(absl::StrCat(api, ": isLazyLoad must be 0 or 1"));
        }
        break;
      case ACL_RT_BINARY_LOAD_OPT_MAGIC:
        if (from_file) return Invalid(absl::StrCat(api, ": the magic option is for data only"));
        if (option.value.magic != ACL_RT_BINARY_MAGIC_ELF_AICORE &&
            option.value.magic != ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE &&
            option.value.magic != ACL_RT_BINARY_MAGIC_ELF_CUBE_CORE) {
          return Invalid(absl::StrCat(api, ": unknown magic ", option.value.magic));
        }
        break;
      case ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE:
        return acld::AclStatus(ACL_ERROR_API_NOT_SUPPORT,
                               absl::StrCat(api, ": AI CPU kernels are not supported by acld"));
      default:
        return Invalid(absl::StrCat(api, ": unknown option type ",
                                    acl_client::RawEnum(option.type)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<aclrtBinHandle> Load(absl::string_view binary, const char* api) {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  // A binary belongs to the device of the current context, as in CANN.
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
  absl::StatusOr<uint64_t> binary_id = transport->LoadBinary(context.device, binary);
  if (!binary_id.ok()) {
    return acld::AclStatus(acld::AclCodeOf(binary_id.status()),
                           absl::StrCat(api, ": ", binary_id.status().message()));
  }
  return ToHandle(*binary_id);
}

absl::StatusOr<std::string> ReadBinaryFile(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return acld::AclStatus(ACL_ERROR_INVALID_FILE,
                           absl::StrCat("aclrtBinaryLoadFromFile: cannot open '", path,
                                        "': ", std::strerror(errno)));
  }
  std::string bytes;
  absl::Status status;
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    status = acld::AclStatus(ACL_ERROR_INVALID_FILE,
                             absl::StrCat("aclrtBinaryLoadFromFile: '", path,
                                          "' is not a regular file"));
  } else if (info.st_size <= 0 || static_cast<uint64_t>(info.st_size) > kMaxBinaryFileBytes) {
    status = acld::AclStatus(ACL_ERROR_INVALID_FILE_SIZE,
                             absl::StrCat("aclrtBinaryLoadFromFile: '", path, "' has ",
                                          info.st_size, " bytes; 1 .. ", kMaxBinaryFileBytes,
                                          " are accepted"));
  } else {
    bytes.resize(static_cast<size_t>(info.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != bytes.size()) {
      status = acld::AclStatus(ACL_ERROR_INVALID_FILE,
                               absl::StrCat("aclrtBinaryLoadFromFile: reading '", path,
                                            "' stopped after ", got, " bytes"));
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return bytes;
}

absl::Status CheckLaunchConfig(const aclrtLaunchKernelCfg* cfg) {
  if (cfg == nullptr) return absl::OkStatus();
  if (cfg->numAttrs > 0 && cfg->attrs == nullptr) {
    return Invalid("aclrtLaunchKernelWithConfig: cfg->attrs is NULL with numAttrs > 0");
  }
  bool timeout = false, timeout_us = false;
  for (size_t i = 0; i < cfg->numAttrs; ++i) {
    const int id = acl_client::RawEnum(cfg->attrs[i].id);
    if (id < ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE || id > ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING) {
      return Invalid(absl::StrCat("aclrtLaunchKernelWithConfig: unknown attribute ", id));
    }
    timeout = timeout || id == ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT;
    timeout_us = timeout_us || id == ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US;
  }
  if (timeout && timeout_us) {
    return Invalid("aclrtLaunchKernelWithConfig: TIMEOUT and TIMEOUT_US cannot be set together");
  }
  return absl::OkStatus();
}

absl::Status Launch(aclrtStream stream, acld::FunctionLaunch launch, const char* api) {
  if (launch.function == 0) return NullArgument(api, "funcHandle");
  if (launch.block_dim == 0) return Invalid(absl::StrCat(api, ": numBlocks must be > 0"));
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, api));
  launch.core_limits = acl_client::CoreLimitsOfStream(stream_id);
  return acl_client::Enqueued(transport->LaunchFunction(stream_id, CurrentThreadId(), launch));
}

}  // namespace

extern "C" {

aclError aclrtBinaryLoadFromData(const void* data, size_t length,
                                 const aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtBinaryLoadFromData";
    if (data == nullptr) return NullArgument(api, "data");
    if (binHandle == nullptr) return NullArgument(api, "binHandle");
    if (length == 0) return Invalid(absl::StrCat(api, ": length must be > 0"));
    ACL_RETURN_IF_ERROR(CheckLoadOptions(options, false, api));
    ACL_ASSIGN_OR_RETURN(*binHandle,
                         Load(absl::string_view(static_cast<const char*>(data), length), api));
    return absl::OkStatus();
  });
}

aclError aclrtBinaryLoadFromFile(const char* binPath, aclrtBinaryLoadOptions* options,
                                 aclrtBinHandle* binHandle) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtBinaryLoadFromFile";
    if (binPath == nullptr) return NullArgument(api, "binPath");
    if (binHandle == nullptr) return NullArgument(api, "binHandle");
    ACL_RETURN_IF_ERROR(CheckLoadOptions(options, true, api));
    ACL_ASSIGN_OR_RETURN(std::string bytes, ReadBinaryFile(binPath));
    ACL_ASSIGN_OR_RETURN(*binHandle, Load(bytes, api));
    return absl::OkStatus();
  });
}

aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
  return Api([&]() -> absl::Status {
    if (binHandle == nullptr) return NullArgument("aclrtBinaryUnLoad", "binHandle");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->UnloadBinary(HandleId(binHandle));
  });
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName,
                                aclrtFuncHandle* funcHandle) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtBinaryGetFunction";
    if (binHandle == nullptr) return NullArgument(api, "binHandle");
    if (kernelName == nullptr) return NullArgument(api, "kernelName");
    if (funcHandle == nullptr) return NullArgument(api, "funcHandle");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t function, transport->GetFunction(HandleId(binHandle), kernelName));
    *funcHandle = ToHandle(function);
    return absl::OkStatus();
  });
}

aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle* argsHandle) {
  return Api([&]() -> absl::Status {
    if (funcHandle == nullptr) return NullArgument("aclrtKernelArgsInit", "funcHandle");
    if (argsHandle == nullptr) return NullArgument("aclrtKernelArgsInit", "argsHandle");
    *argsHandle = KernelArgsTable::Get().Init(HandleId(funcHandle));
    return absl::OkStatus();
  });
}

// A parameter's handle is its index + 1 (never NULL).
aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void* param, size_t paramSize,
                               aclrtParamHandle* paramHandle) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtKernelArgsAppend";
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args,
                         KernelArgsTable::Get().Find(argsHandle, api));
    ACL_ASSIGN_OR_RETURN(size_t index, args->Append(param, paramSize));
    if (paramHandle != nullptr) *paramHandle = ToHandle(index + 1);
    return absl::OkStatus();
  });
}

aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle,
                                          aclrtParamHandle* paramHandle) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtKernelArgsAppendPlaceHolder";
    if (paramHandle == nullptr) return NullArgument(api, "paramHandle");
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args,
                         KernelArgsTable::Get().Find(argsHandle, api));
    ACL_ASSIGN_OR_RETURN(size_t index, args->AppendPlaceholder());
    *paramHandle = ToHandle(index + 1);
    return absl::OkStatus();
  });
}

aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle,
                                             aclrtParamHandle paramHandle, size_t dataSize,
                                             void** bufferAddr) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtKernelArgsGetPlaceHolderBuffer";
    if (paramHandle == nullptr) return NullArgument(api, "paramHandle");
    if (bufferAddr == nullptr) return NullArgument(api, "bufferAddr");
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args,
                         KernelArgsTable::Get().Find(argsHandle, api));
    ACL_ASSIGN_OR_RETURN(*bufferAddr, args->PlaceholderBuffer(HandleId(paramHandle) - 1, dataSize));
    return absl::OkStatus();
  });
}

aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args,
                         KernelArgsTable::Get().Find(argsHandle, "aclrtKernelArgsFinalize"));
    return args->Finalize();
  });
}

aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                     aclrtStream stream, aclrtLaunchKernelCfg* cfg,
                                     aclrtArgsHandle argsHandle, void* reserve) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtLaunchKernelWithConfig";
    if (reserve != nullptr) return Invalid(absl::StrCat(api, ": reserve must be NULL"));
    ACL_RETURN_IF_ERROR(CheckLaunchConfig(cfg));
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<KernelArgs> args,
                         KernelArgsTable::Get().Find(argsHandle, api));
    if (args->function() != HandleId(funcHandle)) {
      return Invalid(absl::StrCat(api, ": argsHandle was built for another function"));
    }
    ACL_ASSIGN_OR_RETURN(acld::FunctionLaunch launch, args->ToLaunch(numBlocks));
    return Launch(stream, std::move(launch), api);
  });
}

aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void* argsData,
                           size_t argsSize, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    const char* api = "aclrtLaunchKernel";
    if (argsSize > 0 && argsData == nullptr) return NullArgument(api, "argsData");
    if (argsSize > acld::kMaxKernelArgsBytes) {
      return Invalid(absl::StrCat(api, ": argsSize must be at most ", acld::kMaxKernelArgsBytes));
    }
    // argsData is device memory: the block is read when the stream reaches
    // the launch, after the work queued before it (which may write it).
    acld::FunctionLaunch launch;
    launch.function = HandleId(funcHandle);
    launch.block_dim = numBlocks;
    // A kernel without arguments has no block to read.
    launch.args_address = argsSize == 0 ? 0 : HandleId(argsData);
    launch.args_size = argsSize;
    return Launch(stream, std::move(launch), api);
  });
}

}  // extern "C"
