// Errors: every user-facing failure is a globe::Error whose message starts with the op
// ("[matmul] ...") and ends with the rank that raised it.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace globe {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Rank named in error messages; the distributed runtime sets it after MPI_Init.
int error_rank();
void set_error_rank(int rank);

template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void throw_error(const std::string& message);

}  // namespace detail
}  // namespace globe

// GLOBE_CHECK(cond, "[op] ", details...): throws globe::Error with the streamed message + rank.
#define GLOBE_CHECK(cond, ...)                                              \
  do {                                                                      \
    if (!(cond)) ::globe::detail::throw_error(::globe::detail::concat(__VA_ARGS__)); \
  } while (0)

#define GLOBE_FAIL(...) ::globe::detail::throw_error(::globe::detail::concat(__VA_ARGS__))
