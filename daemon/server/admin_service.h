// The admin socket's gRPC service, used by aclctl. Never served on the runtime socket.
#ifndef ACLD_DAEMON_SERVER_ADMIN_SERVICE_H_
#define ACLD_DAEMON_SERVER_ADMIN_SERVICE_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/time/time.h"
#include "daemon/core/runtime.h"
#include "daemon/server/quota_groups.h"
#include "daemon/server/runtime_service.h"
#include "proto/acl/v1/admin.grpc.pb.h"

namespace acld::server {

// What the runtime socket's acceptor has seen.
struct ListenerStats {
  uint64_t connections_accepted = 0;
  uint32_t connections_open = 0;
  uint64_t accept_pauses = 0;  // accepts deferred: acld was out of descriptors or memory
  // Connections closed at once: their uid held --max_connections_per_uid.
  uint64_t connections_refused = 0;
  // On the identity socket: requests being served, and connections answered
  // "E busy" because their uid had as many being served already.
  uint32_t identity_pending = 0;
  uint64_t identity_busy = 0;
  // The frame gate's (frame_gate.h): connections closed for opening too many
  // streams, and times a uid's streams waited for its rate.
  uint64_t connections_cut = 0;
  uint64_t streams_delayed = 0;
  // Its requests still arriving: times one waited for its uid's others, and
  // their bytes now by uid.
  uint64_t requests_delayed = 0;
  std::map<uid_t, uint64_t> grpc_arriving_bytes;
};

class AdminService final : public acl::v1::Admin::Service {
 public:
  // GetSharing lists entries up to this size and counts the rest.
  static constexpr size_t kMaxSharingReplyBytes = 16 << 20;

  // `health` is acld's (health.h's CheckHealth on its sockets); null: healthy.
  AdminService(Runtime& runtime, RuntimeService& sessions, absl::Time started,
               std::function<ListenerStats()> listener_stats = nullptr,
               std::function<absl::Status()> health = nullptr)
      : runtime_(runtime),
        sessions_(sessions),
        started_(started),
        listener_stats_(std::move(listener_stats)),
        health_(std::move(health)) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const acl::v1::StatusRequest* request,
                         acl::v1::StatusReply* reply) override;
  grpc::Status ListSessions(grpc::ServerContext* context, const acl::v1::SessionsRequest* request,
                            acl::v1::SessionsReply* reply) override;
  grpc::Status ListStreams(grpc::ServerContext* context, const acl::v1::StreamsRequest* request,
                           acl::v1::StreamsReply* reply) override;
  grpc::Status GetSharing(grpc::ServerContext* context, const acl::v1::SharingRequest* request,
                          acl::v1::SharingReply* reply) override;
  grpc::Status GetMemory(grpc::ServerContext* context, const acl::v1::MemoryRequest* request,
                         acl::v1::MemoryReply* reply) override;
  grpc::Status Evict(grpc::ServerContext* context, const acl::v1::EvictRequest* request,
                     acl::v1::EvictReply* reply) override;
  grpc::Status SetQuota(grpc::ServerContext* context, const acl::v1::QuotaRequest* request,
                        acl::v1::QuotaReply* reply) override;
  // INVALID_ARGUMENT outside kMinWeight..kMaxWeight, NOT_FOUND for no such session.
  grpc::Status SetDeviceEnabled(grpc::ServerContext* context,
                                const acl::v1::DeviceEnabledRequest* request,
                                acl::v1::DeviceEnabledReply* reply) override;
  grpc::Status SetWeight(grpc::ServerContext* context, const acl::v1::WeightRequest* request,
                         acl::v1::WeightReply* reply) override;
  // Quota groups (quota_groups.h); UNAVAILABLE when acld serves none.
  grpc::Status CreateGroup(grpc::ServerContext* context,
                           const acl::v1::CreateGroupRequest* request,
                           acl::v1::GroupInfo* reply) override;
  grpc::Status ListGroups(grpc::ServerContext* context, const acl::v1::GroupsRequest* request,
                          acl::v1::GroupsReply* reply) override;
  // Evicts the group's sessions once its sockets are closed.
  grpc::Status DeleteGroup(grpc::ServerContext* context,
                           const acl::v1::DeleteGroupRequest* request,
                           acl::v1::DeleteGroupReply* reply) override;
  grpc::Status LabelGroup(grpc::ServerContext* context, const acl::v1::LabelGroupRequest* request,
                          acl::v1::GroupInfo* reply) override;

  // Where the group RPCs go (set before serving; none: acld serves no groups).
  void SetQuotaGroups(QuotaGroups* groups) { groups_ = groups; }

  // A session's share of each device's time (Runtime::SetWeight's range).
  static constexpr uint32_t kMinWeight = 1;
  static constexpr uint32_t kMaxWeight = 1000;

 private:
  Runtime& runtime_;
  RuntimeService& sessions_;
  const absl::Time started_;
  const std::function<ListenerStats()> listener_stats_;
  const std::function<absl::Status()> health_;
  QuotaGroups* groups_ = nullptr;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_ADMIN_SERVICE_H_
