// cuBLAS and cuBLASLt, opened when a GPU product first needs them (dlopen) instead of linked.
// Linking them costs every process that loads libglobe about 0.4 s of their initialisers and
// 210 MB of resident memory before main, GPU or not (measured: an empty program linked with
// -lcublasLt takes 0.46 s and 212 MB, without it 0.00 s and 2 MB); every CPU-only program, test
// rank and Python import paid that. The CUDA runtime and NCCL load in milliseconds and stay linked.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

namespace globe::kernels::cuda {

// The entry points Globe calls, each from the library that defines it.
struct CublasApi {
  decltype(&::cublasCreate) create;
  decltype(&::cublasSetStream) set_stream;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasGetStatusString) status_string;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&::cublasDgemmStridedBatched) dgemm_strided_batched;
  decltype(&::cublasLtCreate) lt_create;
  decltype(&::cublasLtMatmul) lt_matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) lt_algo_get_heuristic;
  decltype(&::cublasLtMatmulDescCreate) lt_desc_create;
  decltype(&::cublasLtMatmulDescDestroy) lt_desc_destroy;
  decltype(&::cublasLtMatmulDescSetAttribute) lt_desc_set_attribute;
  decltype(&::cublasLtMatmulPreferenceCreate) lt_preference_create;
  decltype(&::cublasLtMatmulPreferenceDestroy) lt_preference_destroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) lt_preference_set_attribute;
  decltype(&::cublasLtMatrixLayoutCreate) lt_layout_create;
  decltype(&::cublasLtMatrixLayoutDestroy) lt_layout_destroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) lt_layout_set_attribute;
};

// Opens the libraries on first use (thread-safe); throws "[cublas] cannot open libcublas.so.N:
// <the loader's words>" where they are missing.
const CublasApi& cublas_api();

}  // namespace globe::kernels::cuda
