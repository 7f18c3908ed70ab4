#include "daemon/server/metrics_exporter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/acl/v1/admin.pb.h"

namespace acld::server {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily Family(const char* name, const char* help, MetricType type) {
  MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

void Add(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

// Whether `given` is `expected` (not empty), in a time that depends on
// `given` alone: it tells nothing of how much matched, nor how long
// `expected` is.
bool SameText(const std::string& given, const std::string& expected) {
  size_t differs = given.size() ^ expected.size();
  for (size_t i = 0; i < given.size(); ++i) {
    differs |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return differs == 0;
}

constexpr size_t kMaxCredentialsBytes = 4096;

}  // namespace

MetricsExporter::MetricsExporter(AdminService& admin, bool per_session)
    : admin_(admin), per_session_(per_session) {}

MetricsExporter::~MetricsExporter() = default;

absl::StatusOr<std::string> MetricsExporter::ReadCredentials(const std::string& path) {
  // Followed if a symlink: a Kubernetes Secret's files are.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  struct stat info {};
  std::string text(kMaxCredentialsBytes + 1, '\0');
  ssize_t read_bytes = -1;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    read_bytes = pread(fd, text.data(), text.size(), 0);
  }
  close(fd);
  if (!S_ISREG(info.st_mode) || (info.st_uid != 0 && info.st_uid != geteuid()) ||
      (info.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, " must be a regular file of root or acld's user that nobody else may read or "
              "write (mode 0600 or 0400)"));
  }
  if (read_bytes < 0 || static_cast<size_t>(read_bytes) > kMaxCredentialsBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ", or it is over ", kMaxCredentialsBytes, " bytes"));
  }
  text.resize(static_cast<size_t>(read_bytes));
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text.back() == '\r') text.pop_back();
  // Empty would mean no authentication at all: never what a file was given for.
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " holds no credentials"));
  return text;
}

absl::StatusOr<std::shared_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& address, AdminService& admin, bool per_session,
    const std::string& credentials) {
  const size_t colon = credentials.find(':');
  if (!credentials.empty() &&
      (colon == 0 || colon == std::string::npos || colon + 1 == credentials.size())) {
    return absl::InvalidArgumentError(
        "metrics credentials must be USER:PASSWORD, neither of them empty");
  }
  std::shared_ptr<MetricsExporter> exporter(new MetricsExporter(admin, per_session));
  try {
    // A connection that sends nothing holds a worker until the request
    // timeout (civetweb's default: 30 s), before any authentication: two
    // idle connections renewed every half minute blinded the scrapes. Now
    // each is dropped after 2 s, and it takes more of them.
    exporter->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", "4", "request_timeout_ms", "2000"});
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", error.what()));
  }
  const std::vector<int> ports = exporter->exposer_->GetListeningPorts();
  if (ports.empty()) return absl::UnavailableError(absl::StrCat("no port for ", address));
  exporter->port_ = ports.front();
  if (!credentials.empty()) {
    exporter->exposer_->RegisterAuth(
        [user = credentials.substr(0, colon), password = credentials.substr(colon + 1)](
            const std::string& given_user, const std::string& given_password) {
          // Both compared whole, in time that does not tell how much matched.
          return SameText(given_user, user) & SameText(given_password, password);
        },
        "acld");
  }
  exporter->exposer_->RegisterCollectable(exporter);
  return exporter;
}

void MetricsExporter::AddGroups(std::vector<MetricFamily>& families) const {
  acl::v1::GroupsRequest request;
  acl::v1::GroupsReply reply;
  if (!admin_.ListGroups(nullptr, &request, &reply).ok()) return;
  MetricFamily limit = Family("acld_group_memory_limit_bytes",
                              "Device memory a quota group's sessions may hold together on the "
                              "device (none: no limit).",
                              MetricType::Gauge);
  MetricFamily used = Family("acld_group_memory_used_bytes",
                             "Device memory a quota group's sessions hold on the device.",
                             MetricType::Gauge);
  MetricFamily sessions =
      Family("acld_group_sessions", "Sessions of a quota group.", MetricType::Gauge);
  MetricFamily streams =
      Family("acld_group_streams", "Streams of a quota group's sessions.", MetricType::Gauge);
  for (const acl::v1::GroupInfo& group : reply.groups()) {
    // The labels the device plugin attaches, so dashboards can sum per pod.
    auto label = [&](const char* key) {
      auto found = group.labels().find(key);
      return found == group.labels().end() ? std::string() : found->second;
    };
    // The group's public name, never its id: the id opens its directory.
    const std::vector<ClientMetric::Label> labels = {{"group", QuotaGroupName(group.id())},
                                                     {"pod", label("pod")},
                                                     {"namespace", label("namespace")},
                                                     {"container", label("container")}};
    Add(sessions, group.sessions(), labels);
    Add(streams, group.streams(), labels);
    for (const acl::v1::GroupDevice& device : group.devices()) {
      std::vector<ClientMetric::Label> on_device = labels;
      on_device.push_back({"device", absl::StrCat(device.device())});
      Add(used, static_cast<double>(device.memory_used()), on_device);
      if (device.memory_limit() != 0) {
        Add(limit, static_cast<double>(device.memory_limit()), on_device);
      }
    }
  }
  for (MetricFamily* family : {&limit, &used, &sessions, &streams}) {
    families.push_back(std::move(*family));
  }
}

std::vector<MetricFamily> MetricsExporter::Collect() const {
  acl::v1::StatusRequest request;
  acl::v1::StatusReply status;
  if (!admin_.GetStatus(nullptr, &request, &status).ok()) return {};

  std::vector<MetricFamily> families;
  auto gauge = [&](const char* name, const char* help, double value) {
    families.push_back(Family(name, help, MetricType::Gauge));
    Add(families.back(), value);
  };
  auto counter = [&](const char* name, const char* help, double value) {
    families.push_back(Family(name, help, MetricType::Counter));
    Add(families.back(), value);
  };
  gauge("acld_uptime_seconds", "Seconds since acld started.", status.uptime_seconds());
  gauge("acld_host_init_refcount", "The host-wide aclInit reference count.",
        status.host_refcount());
  gauge("acld_sessions", "Client sessions open.", status.session_count());
  gauge("acld_sessions_max", "The session cap (--max_sessions).", status.max_sessions());
  gauge("acld_sessions_closing", "Sessions acld ended whose handler has not returned yet.",
        status.sessions_closing());
  counter("acld_sessions_refused_total",
          "Sessions refused: over a cap, without a valid identity, or while shutting down.",
          static_cast<double>(status.sessions_refused()));
  counter("acld_hello_timeouts_total", "gRPC session streams cancelled for want of a Hello.",
          static_cast<double>(status.hello_timeouts()));
  counter("acld_connections_accepted_total", "Connections accepted on the runtime socket.",
          static_cast<double>(status.connections_accepted()));
  counter("acld_accept_pauses_total",
          "Times accepting paused because acld ran out of descriptors or memory.",
          static_cast<double>(status.accept_pauses()));

  MetricFamily total = Family("acld_device_memory_bytes", "Device memory.", MetricType::Gauge);
  MetricFamily used = Family("acld_device_memory_used_bytes",
                             "Device memory allocated by every session.", MetricType::Gauge);
  MetricFamily busy = Family("acld_device_busy_ratio",
                             "Share of the recent past the device computed (0 to 1).",
                             MetricType::Gauge);
  MetricFamily up = Family("acld_device_up", "1 while the device is brought up.", MetricType::Gauge);
  MetricFamily holders = Family("acld_device_sessions",
                                "Sessions holding a reference on the device.", MetricType::Gauge);
  MetricFamily disabled = Family("acld_device_disabled",
                                 "1 while the operator has the device taken out.",
                                 MetricType::Gauge);
  MetricFamily healthy = Family("acld_device_healthy",
                                "1 while acld serves and the device is not disabled.",
                                MetricType::Gauge);
  MetricFamily tasks = Family("acld_tasks_total", "Tasks of the device's streams, by how they ended.",
                              MetricType::Counter);
  for (const acl::v1::DeviceInfo& device : status.devices()) {
    const std::string id = absl::StrCat(device.id());
    const std::vector<ClientMetric::Label> labels = {{"device", id}};
    Add(total, static_cast<double>(device.memory_bytes()), labels);
    Add(used, static_cast<double>(device.used_bytes()), labels);
    if (device.compute_percent() >= 0) Add(busy, device.compute_percent() / 100.0, labels);
    Add(up, device.up() ? 1 : 0, labels);
    Add(holders, device.sessions(), labels);
    Add(disabled, device.disabled() ? 1 : 0, labels);
    Add(healthy, device.healthy() ? 1 : 0, labels);
    Add(tasks, static_cast<double>(device.tasks_completed()),
        {{"device", id}, {"result", "completed"}});
    Add(tasks, static_cast<double>(device.tasks_failed()), {{"device", id}, {"result", "failed"}});
    Add(tasks, static_cast<double>(device.tasks_discarded()),
        {{"device", id}, {"result", "discarded"}});
  }
  for (MetricFamily* family :
       {&total, &used, &busy, &up, &holders, &disabled, &healthy, &tasks}) {
    families.push_back(std::move(*family));
  }

  uint64_t streams = 0;
  uint64_t pending_callbacks = 0;
  for (const acl::v1::SessionInfo& session : status.sessions()) {
    streams += session.streams();
    pending_callbacks += session.pending_callbacks();
  }
  gauge("acld_streams", "Streams of every session.", static_cast<double>(streams));
  gauge("acld_pending_callbacks", "Host callbacks delivered to processes and not finished.",
        static_cast<double>(pending_callbacks));
  MetricFamily latency = Family("acld_host_callback_seconds",
                                "Blocking host callbacks, from their delivery to the process's "
                                "answer.",
                                MetricType::Histogram);
  ClientMetric histogram;
  const acl::v1::Histogram& measured = status.callback_latency();
  for (int i = 0; i < measured.upper_bounds_size() && i < measured.cumulative_counts_size(); ++i) {
    histogram.histogram.bucket.push_back(
        ClientMetric::Bucket{measured.cumulative_counts(i), measured.upper_bounds(i)});
  }
  histogram.histogram.bucket.push_back(
      ClientMetric::Bucket{measured.count(), std::numeric_limits<double>::infinity()});
  histogram.histogram.sample_count = measured.count();
  histogram.histogram.sample_sum = measured.sum();
  latency.metric.push_back(std::move(histogram));
  families.push_back(std::move(latency));
  AddGroups(families);
  if (!per_session_) return families;

  MetricFamily memory = Family("acld_session_memory_bytes",
                               "Device memory a session allocated.", MetricType::Gauge);
  MetricFamily session_streams =
      Family("acld_session_streams", "Streams a session holds.", MetricType::Gauge);
  for (const acl::v1::SessionInfo& session : status.sessions()) {
    std::vector<ClientMetric::Label> labels = {{"session", absl::StrCat(session.id())},
                                               {"pid", absl::StrCat(session.pid())},
                                               {"uid", absl::StrCat(session.uid())}};
    if (!session.group().empty()) labels.push_back({"group", QuotaGroupName(session.group())});
    Add(memory, static_cast<double>(session.memory_bytes()), labels);
    Add(session_streams, session.streams(), labels);
  }
  families.push_back(std::move(memory));
  families.push_back(std::move(session_streams));
  return families;
}

}  // namespace acld::server
