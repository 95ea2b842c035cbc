#include "globe/base/error.h"

namespace globe::detail {

namespace {
int g_error_rank = 0;
}

int error_rank() { return g_error_rank; }
void set_error_rank(int rank) { g_error_rank = rank; }

void throw_error(const std::string& message) {
  throw Error(message + " (rank " + std::to_string(g_error_rank) + ")");
}

}  // namespace globe::detail
