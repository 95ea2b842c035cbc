#include "globe/kernels/cuda/cublas.h"

#include <mutex>
#include <vector>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/memory.h"
#include "globe/device/stream.h"

namespace globe::kernels::cuda {

void check_cublas(cublasStatus_t status, const char* op, const char* call) {
  GLOBE_CHECK(status == CUBLAS_STATUS_SUCCESS, "[", op, "] cuBLAS error: ", cublas_api().status_string(status), " (", call,
              ")");
}

cublasHandle_t cublas_handle(const Device& device) {
  static std::mutex mutex;
  static std::vector<cublasHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  if (int(handles.size()) <= device.index) handles.resize(size_t(device.index) + 1, nullptr);
  cublasHandle_t& h = handles[size_t(device.index)];
  if (h == nullptr) {
    GLOBE_CUDA_CHECK(cudaSetDevice(device.index), "cublas");
    check_cublas(cublas_api().create(&h), "cublas", "cublasCreate");
    check_cublas(cublas_api().set_stream(h, static_cast<cudaStream_t>(compute_stream(device).handle)), "cublas",
                 "cublasSetStream");
  }
  return h;
}

CublasLt cublaslt(const Device& device) {
  // 32 MiB, the size cuBLAS recommends on Hopper; a smaller one only narrows the algorithms.
  constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  static std::mutex mutex;
  static std::vector<CublasLt> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  if (int(contexts.size()) <= device.index) contexts.resize(size_t(device.index) + 1);
  CublasLt& lt = contexts[size_t(device.index)];
  if (lt.handle == nullptr) {
    GLOBE_CUDA_CHECK(cudaSetDevice(device.index), "cublasLt");
    check_cublas(cublas_api().lt_create(&lt.handle), "cublasLt", "cublasLtCreate");
  }
  if (lt.workspace == nullptr) {
    // Straight from the driver, not the tensor allocator: like cuBLAS's own buffers, it is not
    // tensor memory, so memory_stats leaves it out. Short of memory, the allocator's cache goes
    // back to the driver first, as the allocator itself does.
    GLOBE_CUDA_CHECK(cudaSetDevice(device.index), "cublasLt");
    cudaError_t err = cudaMalloc(&lt.workspace, kWorkspaceBytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      globe::empty_cache(device);
      err = cudaMalloc(&lt.workspace, kWorkspaceBytes);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      lt.workspace = nullptr;
      GLOBE_FAIL("[cublasLt] out of memory on ", device.str(), " for its ", kWorkspaceBytes >> 20,
                 " MiB workspace (", cudaGetErrorString(err), ")");
    }
    lt.workspace_bytes = kWorkspaceBytes;
  }
  return lt;
}

}  // namespace globe::kernels::cuda
