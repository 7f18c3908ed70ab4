#include "hal/acl/device_numbers.h"

#include "gtest/gtest.h"

namespace hal::acl {
namespace {

// CANN states a device's notifies per product; acld tells products apart by
// SoC name, and gives any name it does not know the fewest.
TEST(DeviceNumbersTest, NotifiesAreWhatCannStatesForTheSocsProduct) {
  for (const char* a2_or_a3 : {"Ascend910B1", "Ascend910B4", "Ascend910_9391", "Ascend910_9372"}) {
    EXPECT_EQ(NotifiesOfSoc(a2_or_a3), 8192u) << a2_or_a3;
  }
  EXPECT_EQ(NotifiesOfSoc("Ascend950PR_9599"), 65535u);
  EXPECT_EQ(NotifiesOfSoc("Ascend910_9599"), 65535u);
  EXPECT_EQ(NotifiesOfSoc("Ascend310B1"), 2048u);
  // Atlas training and inference cards, and names no product has.
  for (const char* fewest : {"Ascend910A", "Ascend910ProB", "Ascend910B", "Ascend910B-fake",
                             "Ascend310P3", "AcldSim910", ""}) {
    EXPECT_EQ(NotifiesOfSoc(fewest), 1024u) << fewest;
  }
}

}  // namespace
}  // namespace hal::acl
