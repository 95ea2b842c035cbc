#include "globe/kernels/matmul_precision.h"

#include <cstdlib>

#include "globe/base/error.h"

namespace globe {

namespace {

// 0 highest, 1 high, 2 medium.
int parse(std::string_view p, const char* where) {
  if (p == "highest") return 0;
  if (p == "high") return 1;
  if (p == "medium") return 2;
  GLOBE_FAIL("[", where, "] '", p, "' is not a precision: highest (full float32, the default), high or medium ",
             "(TF32 products where the device has them)");
}

int& level() {
  static int value = [] {
    const char* env = std::getenv("GLOBE_MATMUL_PRECISION");
    return env != nullptr && *env != 0 ? parse(env, "GLOBE_MATMUL_PRECISION") : 0;
  }();
  return value;
}

}  // namespace

void set_float32_matmul_precision(std::string_view precision) { level() = parse(precision, "set_float32_matmul_precision"); }

std::string float32_matmul_precision() {
  static const char* const names[] = {"highest", "high", "medium"};
  return names[level()];
}

bool kernels::float32_matmul_allows_tf32() { return level() > 0; }

}  // namespace globe
