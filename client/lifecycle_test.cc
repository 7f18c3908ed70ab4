#include "client/lifecycle.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/embedded_transport.h"
#include "hal/sim/sim_backend.h"
#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acl_client {
namespace {

// What the callbacks saw, in order. userData is the callback's label.
std::mutex events_mu;
std::vector<std::string> events;
std::string last_config;

void Record(const std::string& event) {
  std::lock_guard<std::mutex> lock(events_mu);
  events.push_back(event);
}

aclError InitOk(const char* config, size_t len, void* label) {
  last_config.assign(config, len);
  Record(std::string("init:") + static_cast<const char*>(label));
  return ACL_SUCCESS;
}
aclError InitOk2(const char* config, size_t len, void* label) { return InitOk(config, len, label); }
aclError InitFails(const char*, size_t, void* label) {
  Record(std::string("init:") + static_cast<const char*>(label));
  return 123456;
}
aclError FinalizeOk(void* label) {
  Record(std::string("fin:") + static_cast<const char*>(label));
  return ACL_SUCCESS;
}
aclError FinalizeOk2(void* label) { return FinalizeOk(label); }
aclError FinalizeFails(void* label) {
  Record(std::string("fin:") + static_cast<const char*>(label));
  return 654321;
}

char kA[] = "a", kB[] = "b", kC[] = "c", kD[] = "d", kE[] = "e", kF[] = "f";

// The embedded runtime, counting the references asked for and keeping the
// settings of the last Initialize.
class CountingTransport : public EmbeddedTransport {
 public:
  using EmbeddedTransport::EmbeddedTransport;
  absl::StatusOr<uint64_t> AddInitReference() override {
    ++references_asked;
    return EmbeddedTransport::AddInitReference();
  }
  absl::Status Initialize(const acld::InitSettings& settings) override {
    initialized_with = settings;
    return EmbeddedTransport::Initialize(settings);
  }
  int references_asked = 0;
  std::optional<acld::InitSettings> initialized_with;
};

class LifecycleTest : public ::testing::Test {
 protected:
  LifecycleTest()
      : lifecycle_([this](const acld::InitSettings* initialize) -> absl::StatusOr<Transport*> {
                     opening_settings_.push_back(initialize != nullptr
                                                     ? std::optional(*initialize)
                                                     : std::nullopt);
                     return &transport_;
                   },
                   [this] { ++finalized_; }) {
    events.clear();
  }

  uint64_t Count() { return *transport_.InitCount(); }

  std::string WriteConfig(const std::string& name, const std::string& content) {
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  CountingTransport transport_{hal::sim::CreateSimBackend({}), nullptr};
  std::atomic<int> finalized_{0};
  // What each request for the transport offered a session that opens then.
  std::vector<std::optional<acld::InitSettings>> opening_settings_;
  Lifecycle lifecycle_;
};

// A first aclInit reads its config before it asks for the session, and
// offers the settings it then initializes with to a session that opens
// now (which sends them as it opens: RemoteTransport::Connect). A repeated
// one offers nothing, and a config that does not read asks for no session.
TEST_F(LifecycleTest, AFirstInitOffersItsSettingsToTheSessionThatOpens) {
  const std::string config =
      WriteConfig("offered.json", R"({"defaultDevice": {"default_device": "1"}})");
  const absl::Status initialized = lifecycle_.Init(config.c_str());
  ASSERT_TRUE(initialized.ok()) << initialized;
  ASSERT_EQ(opening_settings_.size(), 1u);
  ASSERT_TRUE(opening_settings_[0].has_value());
  ASSERT_TRUE(transport_.initialized_with.has_value());
  EXPECT_EQ(*opening_settings_[0], *transport_.initialized_with);
  EXPECT_EQ(opening_settings_[0]->default_device, 1);

  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(config.c_str())), ACL_ERROR_REPEAT_INITIALIZE);
  ASSERT_EQ(opening_settings_.size(), 2u);
  EXPECT_FALSE(opening_settings_[1].has_value());

  ASSERT_TRUE(lifecycle_.FinalizeReference(nullptr).ok());
  ASSERT_TRUE(lifecycle_.Finalize().ok());
  const size_t asked = opening_settings_.size();
  EXPECT_FALSE(lifecycle_.Init(WriteConfig("broken.json", "{not json").c_str()).ok());
  EXPECT_EQ(opening_settings_.size(), asked);
}

// A process not initialized has a count of 0 in the runtime: its aclInit
// initializes at once, without asking for a reference first (a round trip
// to acld); a repeated one asks, and counts.
TEST_F(LifecycleTest, OnlyARepeatedInitAsksForAReference) {
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());
  EXPECT_EQ(transport_.references_asked, 0);
  EXPECT_EQ(Count(), 1u);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(nullptr)), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(transport_.references_asked, 1);
  EXPECT_EQ(Count(), 2u);
  uint64_t left = 0;
  ASSERT_TRUE(lifecycle_.FinalizeReference(&left).ok());
  EXPECT_EQ(left, 1u);
  ASSERT_TRUE(lifecycle_.Finalize().ok());
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());  // finalized: a first init again
  EXPECT_EQ(transport_.references_asked, 1);
  EXPECT_EQ(Count(), 1u);
}

// The runtime initialized while this object did not learn it (an answer
// that came too late): aclInit is a repeated one, and counts.
TEST_F(LifecycleTest, AnInitTheRuntimeAppliedUnseenMakesTheNextOneRepeated) {
  ASSERT_TRUE(transport_.Initialize(acld::InitSettings{}).ok());
  EXPECT_EQ(Count(), 1u);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(nullptr)), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(transport_.references_asked, 1);
  EXPECT_EQ(Count(), 2u);
}

TEST_F(LifecycleTest, RepeatedInitCountsReferences) {
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());
  EXPECT_EQ(Count(), 1u);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(nullptr)), ACL_ERROR_REPEAT_INITIALIZE);
  // A repeated init does not read the config at all.
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init("/no/such/file.json")), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(Count(), 3u);
}

TEST_F(LifecycleTest, InitCallbacksRunInTypeOrderWithTheConfig) {
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_OTHER, InitOk, kA).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_MODEL, InitOk, kB).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_OTHER, InitOk2, kC).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_DVPP, InitOk, kD).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_OP_EXECUTOR, InitOk, kE).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_OP_COMPILER, InitOk, kF).ok());
  const std::string config = "{\"err_msg_mode\": \"0\"}";
  ASSERT_TRUE(lifecycle_.Init(WriteConfig("order.json", config).c_str()).ok());
  EXPECT_EQ(events, (std::vector<std::string>{"init:b", "init:e", "init:d", "init:a", "init:c"}));
  EXPECT_EQ(last_config, config);
  // A repeated init notifies nobody.
  events.clear();
  lifecycle_.Init(nullptr).IgnoreError();
  EXPECT_TRUE(events.empty());
}

TEST_F(LifecycleTest, FailingInitCallbackLeavesTheProcessUninitialized) {
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_MODEL, InitOk, kA).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_DVPP, InitFails, kB).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_OTHER, InitOk, kC).ok());
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(nullptr)), 123456);
  EXPECT_EQ(events, (std::vector<std::string>{"init:a", "init:b"}));
  EXPECT_EQ(Count(), 0u);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Finalize()), ACL_ERROR_REPEAT_FINALIZE);
  ASSERT_TRUE(lifecycle_.UnregisterInitCallback(ACL_REG_TYPE_ACL_DVPP, InitFails).ok());
  EXPECT_TRUE(lifecycle_.Init(nullptr).ok());
  EXPECT_EQ(Count(), 1u);
}

TEST_F(LifecycleTest, LateInitCallbackRunsAtOnceAndItsResultIsIgnored) {
  const std::string config = "{\"max_opqueue_num\": 100}";
  ASSERT_TRUE(lifecycle_.Init(WriteConfig("late.json", config).c_str()).ok());
  ASSERT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_OTHER, InitOk, kA).ok());
  EXPECT_EQ(events, std::vector<std::string>{"init:a"});
  EXPECT_EQ(last_config, config);
  EXPECT_TRUE(lifecycle_.RegisterInitCallback(ACL_REG_TYPE_ACL_MODEL, InitFails, kB).ok());
  EXPECT_EQ(Count(), 1u);
}

TEST_F(LifecycleTest, FinalizeReferenceCountsDownAndFinalizesAtOne) {
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_OTHER, FinalizeOk, kA).ok());
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_ACL_DVPP, FinalizeOk, kB).ok());
  ASSERT_TRUE(
      lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_ACL_OP_COMPILER, FinalizeOk, kC).ok());
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_ACL_MODEL, FinalizeOk, kD).ok());
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_OTHER, FinalizeOk2, kE).ok());
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());
  lifecycle_.Init(nullptr).IgnoreError();
  lifecycle_.Init(nullptr).IgnoreError();
  uint64_t ref = 99;
  ASSERT_TRUE(lifecycle_.FinalizeReference(&ref).ok());
  EXPECT_EQ(ref, 2u);
  ASSERT_TRUE(lifecycle_.FinalizeReference(&ref).ok());
  EXPECT_EQ(ref, 1u);
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(lifecycle_.FinalizeReference(&ref).ok());
  EXPECT_EQ(ref, 0u);
  EXPECT_EQ(events, (std::vector<std::string>{"fin:c", "fin:d", "fin:b", "fin:a", "fin:e"}));
  EXPECT_EQ(finalized_, 1);
  ref = 99;
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.FinalizeReference(&ref)), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(ref, 0u);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.FinalizeReference(nullptr)), ACL_ERROR_REPEAT_FINALIZE);
}

TEST_F(LifecycleTest, FinalizeIgnoresTheCount) {
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_OTHER, FinalizeOk, kA).ok());
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Finalize()), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());
  lifecycle_.Init(nullptr).IgnoreError();
  ASSERT_TRUE(lifecycle_.Finalize().ok());
  EXPECT_EQ(Count(), 0u);
  EXPECT_EQ(events, std::vector<std::string>{"fin:a"});
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Finalize()), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(events.size(), 1u);
}

TEST_F(LifecycleTest, FailingFinalizeCallbackKeepsTheProcessInitialized) {
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_ACL_MODEL, FinalizeFails, kA).ok());
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_OTHER, FinalizeOk, kB).ok());
  ASSERT_TRUE(lifecycle_.Init(nullptr).ok());
  uint64_t ref = 0;
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.FinalizeReference(&ref)), 654321);
  EXPECT_EQ(ref, 1u);
  EXPECT_EQ(Count(), 1u);
  EXPECT_EQ(events, std::vector<std::string>{"fin:a"});
  ASSERT_TRUE(lifecycle_.UnregisterFinalizeCallback(ACL_REG_TYPE_ACL_MODEL, FinalizeFails).ok());
  EXPECT_TRUE(lifecycle_.Finalize().ok());
  EXPECT_EQ(Count(), 0u);
}

TEST_F(LifecycleTest, ConfigErrorsLeaveTheProcessUninitialized) {
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init("/no/such/acl.json")), ACL_ERROR_INVALID_FILE);
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(WriteConfig("bad.json", "{oops").c_str())),
            ACL_ERROR_PARSE_FILE);
  EXPECT_EQ(Count(), 0u);
  EXPECT_TRUE(lifecycle_.Init(WriteConfig("empty.json", "").c_str()).ok());
}

TEST_F(LifecycleTest, ReinitMustUseTheFirstConfigContent) {
  const std::string first = WriteConfig("first.json", "{\"max_opqueue_num\": 1}");
  const std::string second = WriteConfig("second.json", "{\"max_opqueue_num\": 2}");
  ASSERT_TRUE(lifecycle_.Init(first.c_str()).ok());
  ASSERT_TRUE(lifecycle_.Finalize().ok());
  EXPECT_EQ(acld::AclCodeOf(lifecycle_.Init(second.c_str())), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Count(), 0u);
  EXPECT_TRUE(lifecycle_.Init(first.c_str()).ok());
}

TEST_F(LifecycleTest, DefaultDeviceComesFromTheConfigAndIsRangeChecked) {
  EXPECT_EQ(
      acld::AclCodeOf(lifecycle_.Init(
          WriteConfig("dev9.json", "{\"defaultDevice\":{\"default_device\":\"9\"}}").c_str())),
      ACL_ERROR_INVALID_PARAM);
  EXPECT_FALSE(lifecycle_.default_device().has_value());
  ASSERT_TRUE(
      lifecycle_
          .Init(WriteConfig("dev1.json", "{\"defaultDevice\":{\"default_device\":\"1\"}}").c_str())
          .ok());
  EXPECT_EQ(lifecycle_.default_device(), 1);
  ASSERT_TRUE(lifecycle_.Finalize().ok());
  EXPECT_FALSE(lifecycle_.default_device().has_value());
}

TEST_F(LifecycleTest, ConcurrentFinalizeReferenceRunsCallbacksExactlyOnce) {
  constexpr int kThreads = 16;
  ASSERT_TRUE(lifecycle_.RegisterFinalizeCallback(ACL_REG_TYPE_OTHER, FinalizeOk, kA).ok());
  std::vector<std::thread> threads;
  std::atomic<int> repeats{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      absl::Status status = lifecycle_.Init(nullptr);
      if (acld::AclCodeOf(status) == ACL_ERROR_REPEAT_INITIALIZE) ++repeats;
    });
  }
  for (auto& thread : threads) thread.join();
  threads.clear();
  EXPECT_EQ(repeats, kThreads - 1);
  EXPECT_EQ(Count(), static_cast<uint64_t>(kThreads));
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (!lifecycle_.FinalizeReference(nullptr).ok()) ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(Count(), 0u);
  EXPECT_EQ(events, std::vector<std::string>{"fin:a"});
  EXPECT_EQ(finalized_, 1);
}

}  // namespace
}  // namespace acl_client
