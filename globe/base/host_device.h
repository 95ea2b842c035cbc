// GLOBE_HOST_DEVICE marks plain functions that CUDA device code calls as well as the host: nvcc
// compiles them for both; a host compiler sees nothing.
#pragma once

#if defined(__CUDACC__)
#define GLOBE_HOST_DEVICE __host__ __device__
#else
#define GLOBE_HOST_DEVICE
#endif
