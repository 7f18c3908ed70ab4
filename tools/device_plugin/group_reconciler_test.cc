#include "tools/device_plugin/group_reconciler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace acld::device_plugin {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::vector<ResourceSpec> kResources = {
    {"acld.io/npu", ResourceKind::kWholeDevice},
    {"acld.io/npu-memory", ResourceKind::kMemorySlice}};
const GroupLabels kLabels("acld.io");
const absl::Time kNow = absl::FromUnixSeconds(1'000'000);
const absl::Duration kGrace = absl::Seconds(60);

acl::v1::GroupInfo Group(const std::string& id, const std::string& resource,
                         const std::string& device_ids, absl::Duration age) {
  acl::v1::GroupInfo group;
  group.set_id(id);
  (*group.mutable_labels())["acld.io/resource"] = resource;
  (*group.mutable_labels())["acld.io/device-ids"] = device_ids;
  group.set_created_unix_seconds(absl::ToUnixSeconds(kNow - age));
  return group;
}

void AddContainer(v1::ListPodResourcesResponse* pods, const std::string& pod,
                  const std::string& container, const std::string& resource,
                  std::vector<std::string> ids) {
  v1::PodResources* entry = pods->add_pod_resources();
  entry->set_name(pod);
  entry->set_namespace_("team-a");
  v1::ContainerResources* resources = entry->add_containers();
  resources->set_name(container);
  v1::ContainerDevices* devices = resources->add_devices();
  devices->set_resource_name(resource);
  for (const std::string& id : ids) devices->add_device_ids(id);
}

TEST(PlanReconcileTest, LabelsTheGroupWhoseIdsAContainerHolds) {
  acl::v1::GroupsReply groups;
  *groups.add_groups() = Group("g1", "acld.io/npu-memory", "0:0-1", absl::Seconds(1));
  v1::ListPodResourcesResponse pods;
  AddContainer(&pods, "trainer", "main", "acld.io/npu-memory",
               {"npu-0-slice-1", "npu-0-slice-0"});
  const ReconcileActions actions = PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace);
  ASSERT_EQ(actions.labels.size(), 1u);
  EXPECT_EQ(actions.labels[0].group, "g1");
  EXPECT_EQ(actions.labels[0].pod, "trainer");
  EXPECT_EQ(actions.labels[0].namespace_, "team-a");
  EXPECT_EQ(actions.labels[0].container, "main");
  EXPECT_THAT(actions.retire, IsEmpty());

  // Labelled already: nothing to do.
  (*groups.mutable_groups(0)->mutable_labels())["pod"] = "trainer";
  (*groups.mutable_groups(0)->mutable_labels())["namespace"] = "team-a";
  (*groups.mutable_groups(0)->mutable_labels())["container"] = "main";
  EXPECT_THAT(PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace).labels, IsEmpty());
}

TEST(PlanReconcileTest, RetiresGroupsNoContainerHoldsOnlyAfterTheGrace) {
  acl::v1::GroupsReply groups;
  *groups.add_groups() = Group("old", "acld.io/npu", "1", absl::Seconds(61));
  *groups.add_groups() = Group("young", "acld.io/npu", "2", absl::Seconds(5));
  *groups.add_groups() = Group("held", "acld.io/npu", "0", absl::Seconds(600));
  // Someone else's group, or one with labels the plugin cannot read: kept.
  acl::v1::GroupInfo foreign;
  foreign.set_id("operator");
  *groups.add_groups() = foreign;
  *groups.add_groups() = Group("garbled", "acld.io/npu", "x", absl::Seconds(600));
  v1::ListPodResourcesResponse pods;
  AddContainer(&pods, "p", "c", "acld.io/npu", {"npu-0"});
  // The same IDs under another resource do not keep a group alive.
  AddContainer(&pods, "q", "c", "other.io/npu", {"npu-1"});
  // Unlisted for the first time: nothing is retired yet, whatever its age
  // (one answer that leaves a group out, as a restarted kubelet's may, is
  // not enough).
  const ReconcileActions first = PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace);
  EXPECT_THAT(first.retire, IsEmpty());
  ASSERT_EQ(first.labels.size(), 1u);
  EXPECT_EQ(first.labels[0].group, "held");
  EXPECT_EQ(first.unlisted_since.size(), 2u);
  EXPECT_EQ(first.unlisted_since.at("old"), kNow);
  // Still unlisted a grace later: retired, the young one too (older than
  // the grace by then); a group held again is forgotten.
  const ReconcileActions later = PlanReconcile(kResources, kLabels, groups, pods,
                                               kNow + kGrace, kGrace, first.unlisted_since);
  EXPECT_THAT(later.retire, ElementsAre("old", "young"));
  // Just short of the grace: kept.
  EXPECT_THAT(PlanReconcile(kResources, kLabels, groups, pods, kNow + kGrace - absl::Seconds(1),
                            kGrace, first.unlisted_since)
                  .retire,
              IsEmpty());
}

TEST(PlanReconcileTest, AListCutShortRetiresNothing) {
  acl::v1::GroupsReply groups;
  *groups.add_groups() = Group("old", "acld.io/npu", "1", absl::Seconds(600));
  v1::ListPodResourcesResponse pods;
  for (int i = 0; i < 4097; ++i) AddContainer(&pods, "p", "c", "acld.io/npu", {"npu-0"});
  const std::map<std::string, absl::Time> long_ago = {{"old", kNow - absl::Hours(1)}};
  EXPECT_THAT(PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace, long_ago).retire,
              IsEmpty());
  pods.mutable_pod_resources()->DeleteSubrange(0, 4000);
  EXPECT_THAT(PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace, long_ago).retire,
              ElementsAre("old"));
}

TEST(PlanReconcileTest, KeepsAGroupPartlyHeldAndSkipsUnusableNames) {
  acl::v1::GroupsReply groups;
  *groups.add_groups() = Group("partly", "acld.io/npu", "0,1", absl::Seconds(600));
  *groups.add_groups() = Group("badname", "acld.io/npu", "2", absl::Seconds(600));
  v1::ListPodResourcesResponse pods;
  AddContainer(&pods, "p", "c", "acld.io/npu", {"npu-1"});
  AddContainer(&pods, "pod with spaces", "c", "acld.io/npu", {"npu-2"});
  const ReconcileActions actions = PlanReconcile(kResources, kLabels, groups, pods, kNow, kGrace);
  EXPECT_THAT(actions.retire, IsEmpty());
  EXPECT_THAT(actions.labels, IsEmpty());
}

}  // namespace
}  // namespace acld::device_plugin
