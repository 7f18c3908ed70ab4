#include "tools/device_plugin/admin_client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace acld::device_plugin {
namespace {

// Far above any real answer (a ListGroups of every group acld may hold, a
// status with its sessions), far below what would hurt the plugin.
constexpr int kMaxReplyBytes = 32 << 20;

}  // namespace

absl::Status FromGrpc(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

AdminClient::AdminClient(const std::string& address, absl::Duration timeout) : timeout_(timeout) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxReplyBytes);
  const std::string target = absl::StartsWith(address, "unix:") ? address : "unix:" + address;
  stub_ = acl::v1::Admin::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments));
}

std::unique_ptr<grpc::ClientContext> AdminClient::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  return context;
}

absl::StatusOr<acl::v1::StatusReply> AdminClient::GetStatus() {
  acl::v1::StatusReply reply;
  // Devices and counts only: sessions (what tenants chose to show in them
  // included) could make a reply past what this client receives.
  acl::v1::StatusRequest request;
  request.set_without_sessions(true);
  const grpc::Status status = stub_->GetStatus(NewContext().get(), request, &reply);
  if (!status.ok()) return FromGrpc(status, "acld GetStatus");
  return reply;
}

absl::StatusOr<acl::v1::GroupInfo> AdminClient::CreateGroup(
    const acl::v1::CreateGroupRequest& request) {
  acl::v1::GroupInfo reply;
  const grpc::Status status = stub_->CreateGroup(NewContext().get(), request, &reply);
  if (!status.ok()) return FromGrpc(status, "acld CreateGroup");
  return reply;
}

absl::StatusOr<acl::v1::GroupsReply> AdminClient::ListGroups() {
  acl::v1::GroupsReply reply;
  const grpc::Status status =
      stub_->ListGroups(NewContext().get(), acl::v1::GroupsRequest(), &reply);
  if (!status.ok()) return FromGrpc(status, "acld ListGroups");
  return reply;
}

absl::Status AdminClient::DeleteGroup(const std::string& id) {
  acl::v1::DeleteGroupRequest request;
  request.set_id(id);
  acl::v1::DeleteGroupReply reply;
  return FromGrpc(stub_->DeleteGroup(NewContext().get(), request, &reply),
                  absl::StrCat("acld DeleteGroup ", id));
}

absl::StatusOr<acl::v1::GroupInfo> AdminClient::LabelGroup(
    const acl::v1::LabelGroupRequest& request) {
  acl::v1::GroupInfo reply;
  const grpc::Status status = stub_->LabelGroup(NewContext().get(), request, &reply);
  if (!status.ok()) return FromGrpc(status, absl::StrCat("acld LabelGroup ", request.id()));
  return reply;
}

}  // namespace acld::device_plugin
