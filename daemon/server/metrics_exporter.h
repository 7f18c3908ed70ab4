// acld's Prometheus endpoint (--metrics_address=HOST:PORT, off unless set):
// the figures of `aclctl status`, read on every scrape from the same
// snapshot the admin service answers with, so the two never disagree.
// Per-session series only with --metrics_per_session (their number grows
// with the sessions). docs/operations.md lists the metrics.
// With credentials, a scrape must present them (HTTP basic authentication):
// the series name every NPU pod and what it uses, and a network policy
// cannot keep the users of the acld pod's own node from its port.
#ifndef ACLD_DAEMON_SERVER_METRICS_EXPORTER_H_
#define ACLD_DAEMON_SERVER_METRICS_EXPORTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/server/admin_service.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace acld::server {

class MetricsExporter : public prometheus::Collectable {
 public:
  // Serves /metrics on `address` (HOST:PORT; port 0 picks one) from a fixed
  // few threads of its own (civetweb's: two workers and a listener).
  // `credentials`: "USER:PASSWORD" a scrape must present; empty: none.
  static absl::StatusOr<std::shared_ptr<MetricsExporter>> Start(const std::string& address,
                                                                AdminService& admin,
                                                                bool per_session,
                                                                const std::string& credentials);
  ~MetricsExporter() override;

  // The first line of --metrics_credentials_file: a regular file of root or
  // acld's user that nobody else may read or write (mode 0600 or 0400, as a
  // Kubernetes Secret mounted with defaultMode 0400 is), at most 4 KiB.
  static absl::StatusOr<std::string> ReadCredentials(const std::string& path);

  // The port it listens on.
  int port() const { return port_; }
  // Stops serving (joins its threads): call while still holding the exporter,
  // so that no scrape is left running on it.
  void Stop() { exposer_.reset(); }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  MetricsExporter(AdminService& admin, bool per_session);
  // Every quota group's series (their number is bounded by the groups').
  void AddGroups(std::vector<prometheus::MetricFamily>& families) const;

  AdminService& admin_;
  const bool per_session_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_METRICS_EXPORTER_H_
