// aclDataBuffer through the C API, without aclInit or a daemon (the calls are
// process-local).
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "gtest/gtest.h"

// aclGetDataBufferSize is deprecated, as in CANN; it is tested all the same.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

// The latest message for aclGetRecentErrMsg ("" when none), which it clears.
std::string TakeMessage() {
  const char* message = aclGetRecentErrMsg();
  return message == nullptr ? "" : message;
}

class DataBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TakeMessage();  // start without a message left by another test
    aclrtGetLastError(ACL_RT_THREAD_LEVEL);
  }
};

TEST_F(DataBufferTest, HoldsAnAddressAndASize) {
  char bytes[64];
  aclDataBuffer* buffer = aclCreateDataBuffer(bytes, sizeof(bytes));
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(aclGetDataBufferAddr(buffer), bytes);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), sizeof(bytes));
  EXPECT_EQ(aclGetDataBufferSize(buffer), sizeof(bytes));
  EXPECT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
  EXPECT_EQ(TakeMessage(), "");
  EXPECT_EQ(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
}

TEST_F(DataBufferTest, DestroyingLeavesTheMemoryToTheCaller) {
  std::vector<uint8_t> bytes(16, 0x5A);
  aclDataBuffer* buffer = aclCreateDataBuffer(bytes.data(), bytes.size());
  ASSERT_NE(buffer, nullptr);
  ASSERT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
  EXPECT_EQ(bytes, std::vector<uint8_t>(16, 0x5A));
}

TEST_F(DataBufferTest, AnEmptyBufferHasNullDataAndSizeZero) {
  aclDataBuffer* buffer = aclCreateDataBuffer(nullptr, 0);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(aclGetDataBufferAddr(buffer), nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), 0u);
  EXPECT_EQ(aclGetDataBufferSize(buffer), 0u);
  EXPECT_EQ(TakeMessage(), "");
  EXPECT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
}

TEST_F(DataBufferTest, NullDataWithASizeIsRefused) {
  EXPECT_EQ(aclCreateDataBuffer(nullptr, 8), nullptr);
  const std::string message = TakeMessage();
  EXPECT_NE(message.find("aclCreateDataBuffer"), std::string::npos) << message;
  EXPECT_NE(message.find("size is 8"), std::string::npos) << message;
  EXPECT_EQ(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM);
}

TEST_F(DataBufferTest, UpdateReplacesAddressAndSize) {
  char first[8];
  char second[32];
  aclDataBuffer* buffer = aclCreateDataBuffer(first, sizeof(first));
  ASSERT_NE(buffer, nullptr);
  ASSERT_EQ(aclUpdateDataBuffer(buffer, second, sizeof(second)), ACL_SUCCESS);
  EXPECT_EQ(aclGetDataBufferAddr(buffer), second);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), sizeof(second));
  ASSERT_EQ(aclUpdateDataBuffer(buffer, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(aclGetDataBufferAddr(buffer), nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), 0u);
  EXPECT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
}

TEST_F(DataBufferTest, NullBufferIsRefusedWithAMessage) {
  char bytes[4];
  EXPECT_EQ(aclDestroyDataBuffer(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(TakeMessage().find("aclDestroyDataBuffer: dataBuffer must not be NULL"),
            std::string::npos);
  EXPECT_EQ(aclUpdateDataBuffer(nullptr, bytes, sizeof(bytes)), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(TakeMessage().find("aclUpdateDataBuffer: dataBuffer must not be NULL"),
            std::string::npos);
  // The getters have no error code: NULL and 0, and a message.
  EXPECT_EQ(aclGetDataBufferAddr(nullptr), nullptr);
  EXPECT_NE(TakeMessage().find("aclGetDataBufferAddr: dataBuffer must not be NULL"),
            std::string::npos);
  EXPECT_EQ(aclGetDataBufferSizeV2(nullptr), 0u);
  EXPECT_NE(TakeMessage().find("aclGetDataBufferSizeV2: dataBuffer must not be NULL"),
            std::string::npos);
  EXPECT_EQ(aclGetDataBufferSize(nullptr), 0u);
  EXPECT_NE(TakeMessage().find("aclGetDataBufferSize: dataBuffer must not be NULL"),
            std::string::npos);
}

TEST_F(DataBufferTest, ADestroyedBufferIsRefused) {
  char bytes[4];
  aclDataBuffer* buffer = aclCreateDataBuffer(bytes, sizeof(bytes));
  ASSERT_NE(buffer, nullptr);
  ASSERT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
  EXPECT_EQ(aclDestroyDataBuffer(buffer), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(TakeMessage().find("not a live buffer"), std::string::npos);
  EXPECT_EQ(aclUpdateDataBuffer(buffer, bytes, 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclGetDataBufferAddr(buffer), nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), 0u);
  EXPECT_NE(TakeMessage().find("aclGetDataBufferSizeV2: dataBuffer is not a live buffer"),
            std::string::npos);
}

TEST_F(DataBufferTest, TheDeprecatedSizeKeepsTheLow32Bits) {
  if (sizeof(size_t) < 8) GTEST_SKIP() << "size_t has 32 bits";
  // Only the numbers are kept: the address is never read.
  static char anchor;
  const size_t big = (size_t{1} << 32) + 7;
  aclDataBuffer* buffer = aclCreateDataBuffer(&anchor, big);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(buffer), big);
  EXPECT_EQ(TakeMessage(), "");
  EXPECT_EQ(aclGetDataBufferSize(buffer), 7u);
  EXPECT_NE(TakeMessage().find("aclGetDataBufferSizeV2"), std::string::npos);
  EXPECT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
}

TEST_F(DataBufferTest, ManyThreadsCreateAndDestroy) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      char bytes[16];
      for (int i = 0; i < 1000; ++i) {
        aclDataBuffer* buffer = aclCreateDataBuffer(bytes, 1 + i % 16);
        ASSERT_NE(buffer, nullptr);
        ASSERT_EQ(aclGetDataBufferSizeV2(buffer), size_t(1 + i % 16));
        ASSERT_EQ(aclDestroyDataBuffer(buffer), ACL_SUCCESS);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
