#include "globe/kernels/cuda/cublas.h"

#include <mutex>
#include <vector>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"

namespace globe::kernels::cuda {

void check_cublas(cublasStatus_t status, const char* op, const char* call) {
  GLOBE_CHECK(status == CUBLAS_STATUS_SUCCESS, "[", op, "] cuBLAS error: ", cublasGetStatusString(status), " (", call,
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
    check_cublas(cublasCreate(&h), "cublas", "cublasCreate");
    check_cublas(cublasSetStream(h, static_cast<cudaStream_t>(compute_stream(device).handle)), "cublas",
                 "cublasSetStream");
  }
  return h;
}

}  // namespace globe::kernels::cuda
