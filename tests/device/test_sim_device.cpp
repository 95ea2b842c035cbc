// The "sim" device itself (globe/device/sim/): a CPU-side device every build has, whose memory is
// its own and guarded, so host code that reads a device tensor's bytes without a copy fails here
// as it would on a GPU. What runs on it (every kernel, the cross-device paths) is tested by the
// device-under-test files, the consistency harness and the examples' runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "globe/globe.h"
#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

const Device kSim0 = Device::parse("sim:0"), kSim1 = Device::parse("sim:1");

TEST(SimDevice, IsInEveryBuildAndIsNoAccelerator) {
  EXPECT_TRUE(device_built("sim"));
  EXPECT_EQ(device_count("sim"), 2);
  EXPECT_EQ(kSim1.str(), "sim:1");
  EXPECT_EQ(accelerator_count(), device_count("cuda"));
  EXPECT_THAT(error_of([] { zeros({1}, kFloat32, Device::parse("sim:2")); }),
              HasSubstr("sim:2 does not exist: 2 sim devices visible (sim:0 .. sim:1)"));
}

TEST(SimDevice, ItsMemoryIsCountedApartAndRefusesHostPointers) {
  const MemoryStats cpu_before = memory_stats(kCPU), before = memory_stats(kSim0);
  {
    const Tensor x = full({256}, 2.0, kFloat32, kSim0);
    EXPECT_EQ(x.device(), kSim0);
    EXPECT_EQ(memory_stats(kSim0).current_bytes, before.current_bytes + 1024);
    EXPECT_EQ(memory_stats(kCPU).current_bytes, cpu_before.current_bytes);
    EXPECT_THAT(error_of([&] { (void)x.data<float>(); }), HasSubstr("on sim:0"));
    EXPECT_EQ(testing::values(x), std::vector<double>(256, 2.0));  // through a copy to the host
  }
  EXPECT_EQ(memory_stats(kSim0).current_bytes, before.current_bytes);
  EXPECT_GE(memory_stats(kSim0).reserved_bytes, before.current_bytes + 1024);  // kept for reuse
  empty_cache(kSim0);
  EXPECT_EQ(memory_stats(kSim0).reserved_bytes, memory_stats(kSim0).current_bytes);
  EXPECT_EQ(testing::values(ones({3}, kFloat64, kSim0)), std::vector<double>(3, 1.0));  // reused
}

TEST(SimDevice, CopiesBetweenItsDevicesAndTheHostAreExact) {
  const Tensor x = randn({7, 5});
  const Tensor a = to(x, kSim0), b = to(a, kSim1), back = to(transpose(b, 0, 1), kCPU);
  EXPECT_EQ(b.device(), kSim1);
  EXPECT_EQ(testing::values(back), testing::values(transpose(x, 0, 1)));
  EXPECT_THAT(error_of([&] { add(a, b); }), HasSubstr("input 0 is on sim:0 and input 1 on sim:1"));
}

// Reading a sim tensor's bytes through its device pointer, as host code must never do with a
// device's memory, faults and says so.
TEST(SimDeviceDeathTest, AHostReadOfItsBytesFaultsAndSaysWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Tensor x = full({64}, 3.0, kFloat32, kSim0);
  EXPECT_DEATH(
      {
        const volatile float* p = static_cast<const float*>(x.device_data());
        std::printf("%f\n", double(p[0]));
      },
      "host code touched sim device memory at 0x[0-9a-f]+ outside the sim device's kernels and copies");
  // Its own kernels and copies still work.
  EXPECT_EQ(testing::values(x * 2.0), std::vector<double>(64, 6.0));
}

}  // namespace
}  // namespace globe
