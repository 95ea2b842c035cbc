// A Globe program where Globe's re-pick of OpenBLAS's kernels (kernels/cpu/blas_core.h) applies on any
// x86 CPU with AVX: started with OPENBLAS_CORETYPE=Prescott, OpenBLAS loads with its SSE3 kernels
// and starts its threads; this program's first constructor then forgets the variable, so Globe,
// initialised after it, finds a pick below the CPU and chooses again, as it does where OpenBLAS
// does not know the CPU. Prints Globe's note and the kernels in use. tests/dist/blas_core_starts.sh
// starts it thousands of times.
#include <cstdio>
#include <cstdlib>

#include "globe/kernels/cpu/blas_core.h"

extern "C" char* openblas_get_corename(void);

// Priority 101: before every C++ initialiser of this program, Globe's included (OpenBLAS's own
// constructor, in its library, ran before the program's).
__attribute__((constructor(101))) static void forget_coretype() { unsetenv("OPENBLAS_CORETYPE"); }

int main() {
  std::printf("note: %s\ncore: %s\n", globe::kernels::blas_core_note().c_str(), openblas_get_corename());
  return 0;
}
