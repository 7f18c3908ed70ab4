#include "client/embedded_transport.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "client/process_info.h"
#include "hal/sim/sim_backend.h"

namespace acl_client {
namespace {

template <typename Number>
Number EnvNumber(const char* name, Number fallback) {
  const char* text = std::getenv(name);
  Number value{};
  return text != nullptr && absl::SimpleAtoi(text, &value) && value > 0 ? value : fallback;
}

}  // namespace

EmbeddedTransport::EmbeddedTransport() {
  hal::sim::SimOptions options;
  options.device_count = EnvNumber("ACLD_SIM_DEVICES", options.device_count);
  options.device_memory_bytes = EnvNumber("ACLD_SIM_DEVICE_MEMORY", options.device_memory_bytes);
  runtime_ = std::make_unique<acld::Runtime>(hal::sim::CreateSimBackend(options));
  session_ = runtime_->OpenSession({getpid(), getuid(), ProcessCommandLine()});
}

EmbeddedTransport::~EmbeddedTransport() { Close(); }

}  // namespace acl_client
