# The CUDA backend is optional (docs/design.md §16). GLOBE_CUDA=AUTO (the default) builds it where a
# CUDA toolkit >= 12 is found — nvcc in PATH, under $CUDA_HOME or /usr/local/cuda — ON requires it,
# OFF never builds it. Sets GLOBE_WITH_CUDA and, when ON, the targets GLOBE_CUDA_LIBS to link and
# GLOBE_WITH_NCCL (NCCL found beside the toolkit). cuBLAS / cuBLASLt are opened at run time.
# Device code targets sm_90 (Hopper) as machine code plus PTX, which newer GPUs compile on load.
set(GLOBE_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (where a toolkit is found), ON or OFF")
set_property(CACHE GLOBE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(GLOBE_WITH_CUDA OFF CACHE INTERNAL "")
if(NOT GLOBE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(GLOBE_NVCC nvcc HINTS ENV CUDA_HOME PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
    if(GLOBE_NVCC)
      set(CMAKE_CUDA_COMPILER ${GLOBE_NVCC})
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # sm_90 SASS + compute_90 PTX
    endif()
    enable_language(CUDA)
    # Globe's headers need C++20, which CMake 3.25 does not know how to ask of nvcc: tell it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    endif()
    find_package(CUDAToolkit 12 REQUIRED)
    find_library(GLOBE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib
                 ${CUDAToolkit_TARGET_DIR}/lib)
    find_path(GLOBE_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    set(GLOBE_WITH_CUDA ON CACHE INTERNAL "")
    # cuBLAS and cuBLASLt are opened at their first use (kernels/cuda/cublas_api.h says why), so
    # only their headers are needed here.
    set(GLOBE_CUDA_LIBS CUDA::cudart ${CMAKE_DL_LIBS})
    # NCCL carries GPU tensors' collectives where found; without it they are host-staged over MPI.
    if(GLOBE_NCCL_LIBRARY AND GLOBE_NCCL_INCLUDE_DIR)
      set(GLOBE_WITH_NCCL ON CACHE INTERNAL "")
      list(APPEND GLOBE_CUDA_LIBS ${GLOBE_NCCL_LIBRARY})  # by path: an installed Globe's users link it alike
    else()
      set(GLOBE_WITH_NCCL OFF CACHE INTERNAL "")
    endif()
    message(STATUS "Globe: building the CUDA backend (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES}; "
                   "NCCL: ${GLOBE_NCCL_LIBRARY})")
  elseif(GLOBE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GLOBE_CUDA=ON but no CUDA toolkit was found (nvcc in PATH, $CUDA_HOME or /usr/local/cuda)")
  else()
    message(STATUS "Globe: no CUDA toolkit found, building CPU-only (GLOBE_CUDA=AUTO)")
  endif()
else()
  message(STATUS "Globe: CPU-only build (GLOBE_CUDA=OFF)")
endif()
