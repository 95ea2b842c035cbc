// The device the device tests compare with the CPU: $GLOBE_TEST_DEVICE ("sim", "cuda", "cuda:1"),
// else cuda:0 where this process sees a GPU, else sim:0, the CPU-side test device that every build
// has (globe/device/sim/). So the same tests run every kernel and every cross-device path on the
// sim device in CI and on the GPU where there is one. A test skips, saying why, where the chosen
// kind has no device here.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "globe/globe.h"
#include "test_util.h"

namespace globe::testing {

inline Device device_under_test() {
  const char* chosen = std::getenv("GLOBE_TEST_DEVICE");
  if (chosen != nullptr && *chosen != 0) return Device::parse(chosen);
  return Device::parse(cuda_device_count() > 0 ? "cuda:0" : "sim:0");
}
inline std::string kind_under_test() { return device_type_name(device_under_test().type); }

}  // namespace globe::testing

#define GLOBE_REQUIRE_DEVICE()                                                                     \
  do {                                                                                             \
    const std::string kind = ::globe::testing::kind_under_test();                                 \
    if (!::globe::device_built(kind)) GTEST_SKIP() << "this build has no " << kind << " backend";  \
    if (::globe::device_count(kind) == 0) GTEST_SKIP() << "no " << kind << " device visible";     \
  } while (0)
