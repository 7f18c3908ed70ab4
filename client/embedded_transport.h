// ACLD_ADDRESS=embedded: the runtime core runs inside the application process.
// Same semantics as the daemon, no IPC; single process only. Also the honest
// in-process baseline of the benchmarks.
#ifndef ACLD_CLIENT_EMBEDDED_TRANSPORT_H_
#define ACLD_CLIENT_EMBEDDED_TRANSPORT_H_

#include <memory>

#include "client/transport.h"
#include "daemon/core/runtime.h"

namespace acl_client {

class EmbeddedTransport : public Transport {
 public:
  // Sim devices as the daemon's defaults (2 devices of 4 GiB, committed lazily),
  // overridable with ACLD_SIM_DEVICES and ACLD_SIM_DEVICE_MEMORY.
  EmbeddedTransport();
  ~EmbeddedTransport() override;

  void Close() override { runtime_->CloseSession(session_); }

  absl::StatusOr<uint64_t> InitCount() override { return runtime_->InitCount(session_); }
  absl::StatusOr<uint64_t> AddInitReference() override {
    return runtime_->AddInitReference(session_);
  }
  absl::Status Initialize(const acld::InitSettings& settings) override {
    return runtime_->Initialize(session_, settings);
  }
  absl::Status AbortInit() override { return runtime_->AbortInit(session_); }
  absl::StatusOr<uint64_t> DropInitReference() override {
    return runtime_->DropInitReference(session_);
  }
  absl::Status Finalize() override { return runtime_->Finalize(session_); }
  absl::StatusOr<int32_t> DeviceCount() override { return runtime_->DeviceCount(); }
  absl::Status SetDevice(int32_t device_id) override {
    return runtime_->SetDevice(session_, device_id);
  }
  absl::Status ResetDevice(int32_t device_id, bool force) override {
    return runtime_->ResetDevice(session_, device_id, force);
  }

 private:
  std::unique_ptr<acld::Runtime> runtime_;
  acld::SessionId session_;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_EMBEDDED_TRANSPORT_H_
