#include "globe/kernels/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "globe/base/error.h"

#define GLOBE_STR_(x) #x
#define GLOBE_STR(x) GLOBE_STR_(x)  // the name after macro expansion: cublasCreate -> "cublasCreate_v2"

namespace globe::kernels::cuda {

namespace {

// The library by its versioned name (the loader's search path), else from the toolkit the build
// used (GLOBE_CUDA_LIBRARY_DIR, set by CMake).
void* open_library(const std::string& name) {
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h != nullptr) return h;
  const std::string first_error = dlerror();
#ifdef GLOBE_CUDA_LIBRARY_DIR
  h = dlopen((std::string(GLOBE_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h != nullptr) return h;
#endif
  GLOBE_FAIL("[cublas] cannot open ", name, ": ", first_error);
}

template <class F>
void bind(F& f, void* lib, const char* lib_name, const char* symbol) {
  f = reinterpret_cast<F>(dlsym(lib, symbol));
  GLOBE_CHECK(f != nullptr, "[cublas] ", lib_name, " has no ", symbol, " (a cuBLAS older than the headers Globe was built with?)");
}

CublasApi load() {
  const std::string major = std::to_string(CUBLAS_VER_MAJOR);
  const std::string lt_name = "libcublasLt.so." + major, blas_name = "libcublas.so." + major;
  void* lt = open_library(lt_name);
  void* blas = open_library(blas_name);
  CublasApi a{};
#define GLOBE_BIND(field, lib, fn) bind(a.field, lib, lib##_name.c_str(), GLOBE_STR(fn))
  GLOBE_BIND(create, blas, cublasCreate);
  GLOBE_BIND(set_stream, blas, cublasSetStream);
  GLOBE_BIND(set_math_mode, blas, cublasSetMathMode);
  GLOBE_BIND(status_string, blas, cublasGetStatusString);
  GLOBE_BIND(sgemm_strided_batched, blas, cublasSgemmStridedBatched);
  GLOBE_BIND(dgemm_strided_batched, blas, cublasDgemmStridedBatched);
  GLOBE_BIND(lt_create, lt, cublasLtCreate);
  GLOBE_BIND(lt_matmul, lt, cublasLtMatmul);
  GLOBE_BIND(lt_algo_get_heuristic, lt, cublasLtMatmulAlgoGetHeuristic);
  GLOBE_BIND(lt_desc_create, lt, cublasLtMatmulDescCreate);
  GLOBE_BIND(lt_desc_destroy, lt, cublasLtMatmulDescDestroy);
  GLOBE_BIND(lt_desc_set_attribute, lt, cublasLtMatmulDescSetAttribute);
  GLOBE_BIND(lt_preference_create, lt, cublasLtMatmulPreferenceCreate);
  GLOBE_BIND(lt_preference_destroy, lt, cublasLtMatmulPreferenceDestroy);
  GLOBE_BIND(lt_preference_set_attribute, lt, cublasLtMatmulPreferenceSetAttribute);
  GLOBE_BIND(lt_layout_create, lt, cublasLtMatrixLayoutCreate);
  GLOBE_BIND(lt_layout_destroy, lt, cublasLtMatrixLayoutDestroy);
  GLOBE_BIND(lt_layout_set_attribute, lt, cublasLtMatrixLayoutSetAttribute);
#undef GLOBE_BIND
  return a;
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = load();  // a failed load throws, and the next call tries again
  return api;
}

}  // namespace globe::kernels::cuda
