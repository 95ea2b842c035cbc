// Page 05: ranks that run different ops. Only rank 0 doubles x, so the ranks' sequences of global
// ops diverge: the fingerprint the sum's reduction carries tells them apart and every rank throws
// an error naming the first op where they differ; with GLOBE_FINGERPRINTS=0 the sum silently mixes
// x and 2x; with GLOBE_CHECK_CONSISTENCY=1 the ranks compare each op before it runs.
//
//   [GLOBE_FINGERPRINTS=0 | GLOBE_CHECK_CONSISTENCY=1] build/bin/globe-launch --nproc_per_node 2 build/bin/diverge
#include <iostream>

#include <globe/globe.h>

using namespace globe;

int main() {
  const auto p = Placement::all("cpu");
  manual_seed(0);
  try {
    auto x = randn({4, 4}, p, sbp::split(0));
    Tensor y = dist::world_rank() == 0 ? mul(x, 2.0) : x;  // bug: only rank 0 doubles
    float total = sum(y).item<float>();
    float of_x = sum(x).item<float>();  // for comparison: the sum of x (of 2x: twice that)
    std::cout << "total " << total << "; the sum of x is " << of_x << std::endl;
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  return 0;
}
