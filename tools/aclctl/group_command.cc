#include "tools/aclctl/group_command.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "tools/aclctl/json_printer.h"
#include "tools/aclctl/table.h"

namespace aclctl {
namespace {

grpc::Status Usage(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

std::unique_ptr<grpc::ClientContext> Deadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  // Deleting a group ends its sessions, each given up to a second to hear why.
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  return context;
}

template <typename Number>
bool ParseList(const std::string& text, std::vector<Number>& out) {
  if (text.empty()) return true;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    Number value;
    if (!absl::SimpleAtoi(part, &value)) return false;
    out.push_back(value);
  }
  return true;
}

// "key=value" into `set`, "key-" into `remove`.
bool ParseLabel(const std::string& word, acl::v1::LabelGroupRequest& request) {
  const size_t equals = word.find('=');
  if (equals != std::string::npos && equals > 0) {
    (*request.mutable_set())[word.substr(0, equals)] = word.substr(equals + 1);
    return true;
  }
  if (word.size() > 1 && word.back() == '-') {
    request.add_remove(word.substr(0, word.size() - 1));
    return true;
  }
  return false;
}

std::string GroupsText(const std::vector<const acl::v1::GroupInfo*>& groups) {
  Table table({"GROUP", "DEVICES", "DEVMEM", "STREAMS", "SESSIONS", "LABELS"});
  for (const acl::v1::GroupInfo* group : groups) {
    std::vector<std::string> devices;
    std::vector<std::string> memory;
    for (const acl::v1::GroupDevice& device : group->devices()) {
      devices.push_back(absl::StrCat(device.device()));
      memory.push_back(BytesOfLimit(device.memory_used(), device.memory_limit()));
    }
    std::vector<std::string> labels;
    for (const auto& [key, value] : group->labels()) labels.push_back(absl::StrCat(key, "=", value));
    std::sort(labels.begin(), labels.end());
    table.AddRow({group->id(), absl::StrJoin(devices, ","), absl::StrJoin(memory, ","),
                  CountOfLimit(group->streams(), group->max_streams()),
                  CountOfLimit(group->sessions(), group->max_sessions()),
                  labels.empty() ? "-" : absl::StrJoin(labels, ",")});
  }
  return table.Render();
}

void Print(const google::protobuf::Message& json_form,
           const std::vector<const acl::v1::GroupInfo*>& groups, bool json, bool directories) {
  std::string out;
  if (json) {
    out = ToJson(json_form) + "\n";
  } else {
    out = GroupsText(groups);
    if (directories) {
      for (const acl::v1::GroupInfo* group : groups) {
        out += absl::StrCat("directory of ", group->id(), ": ", group->directory(), "\n");
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

std::vector<std::string> TakeLabelArguments(int& argc, char** argv) {
  std::vector<std::string> labels;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--label") == 0) {
      labels.push_back(i + 1 < argc ? argv[++i] : "");
    } else if (std::strncmp(argv[i], "--label=", 8) == 0) {
      labels.push_back(argv[i] + 8);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return labels;
}

grpc::Status RunGroupCommand(acl::v1::Admin::Stub& stub, const std::vector<std::string>& words,
                             const GroupOptions& options) {
  const std::string verb = words.empty() ? "" : words[0];
  if (verb == "create" && words.size() == 1) {
    acl::v1::CreateGroupRequest request;
    std::vector<int32_t> devices;
    std::vector<uint64_t> memory;
    if (options.devices.empty() || !ParseList(options.devices, devices)) {
      return Usage("group create needs --devices=ID[,ID...] (host device ids)");
    }
    if (!ParseList(options.memory, memory) || (memory.size() > 1 && memory.size() != devices.size())) {
      return Usage("--memory is BYTES (every device) or one BYTES per device, comma-separated");
    }
    request.mutable_devices()->Add(devices.begin(), devices.end());
    request.mutable_memory_bytes()->Add(memory.begin(), memory.end());
    if (options.streams >= 0) request.set_max_streams(static_cast<uint32_t>(options.streams));
    if (options.sessions >= 0) request.set_max_sessions(static_cast<uint32_t>(options.sessions));
    acl::v1::LabelGroupRequest labels;
    for (const std::string& label : options.labels) {
      if (label.find('=') == std::string::npos || !ParseLabel(label, labels)) {
        return Usage(absl::StrCat("--label '", label, "' is not key=value"));
      }
    }
    request.mutable_labels()->insert(labels.set().begin(), labels.set().end());
    acl::v1::GroupInfo reply;
    grpc::Status status = stub.CreateGroup(Deadline().get(), request, &reply);
    if (status.ok()) Print(reply, {&reply}, options.json, /*directories=*/true);
    return status;
  }
  if ((verb == "list" && words.size() == 1) || (verb == "show" && words.size() == 2)) {
    acl::v1::GroupsRequest request;
    if (verb == "show") request.set_id(words[1]);
    acl::v1::GroupsReply reply;
    grpc::Status status = stub.ListGroups(Deadline().get(), request, &reply);
    if (!status.ok()) return status;
    std::vector<const acl::v1::GroupInfo*> groups;
    for (const acl::v1::GroupInfo& group : reply.groups()) groups.push_back(&group);
    if (verb == "show" && !groups.empty()) {
      Print(*groups[0], groups, options.json, /*directories=*/true);
    } else {
      Print(reply, groups, options.json, /*directories=*/false);
    }
    return status;
  }
  if (verb == "delete" && words.size() == 2) {
    acl::v1::DeleteGroupRequest request;
    request.set_id(words[1]);
    acl::v1::DeleteGroupReply reply;
    grpc::Status status = stub.DeleteGroup(Deadline().get(), request, &reply);
    if (status.ok()) {
      std::printf("group %s deleted; %u sessions evicted\n", words[1].c_str(),
                  reply.evicted_sessions());
    }
    return status;
  }
  if (verb == "label" && words.size() >= 3) {
    acl::v1::LabelGroupRequest request;
    request.set_id(words[1]);
    for (size_t i = 2; i < words.size(); ++i) {
      if (!ParseLabel(words[i], request)) {
        return Usage(absl::StrCat("'", words[i], "' is neither key=value nor key-"));
      }
    }
    acl::v1::GroupInfo reply;
    grpc::Status status = stub.LabelGroup(Deadline().get(), request, &reply);
    if (status.ok()) Print(reply, {&reply}, options.json, /*directories=*/false);
    return status;
  }
  return Usage(
      "group create --devices=ID[,ID] [--memory=BYTES[,BYTES]] [--streams=N] [--sessions=N] "
      "[--label key=value ...] | list | show ID | delete ID | label ID key=value... key-...");
}

}  // namespace aclctl
