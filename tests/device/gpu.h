// GPU tests skip, with the reason, where this process sees no CUDA device.
#pragma once

#include <gtest/gtest.h>

#include "globe/globe.h"
#include "test_util.h"

#define GLOBE_REQUIRE_GPU()                                                                        \
  do {                                                                                             \
    if (!::globe::cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";                  \
    if (::globe::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";              \
  } while (0)
