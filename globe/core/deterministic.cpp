#include "globe/core/deterministic.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "globe/base/error.h"

namespace globe {

namespace {

std::atomic<bool>& mode() {
  static std::atomic<bool> on = [] {
    const char* v = std::getenv("GLOBE_DETERMINISTIC");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

std::atomic<bool> rotated{false};

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

bool deterministic() { return mode().load(std::memory_order_relaxed); }
void set_deterministic(bool on) { mode().store(on, std::memory_order_relaxed); }

int64_t leaves_of(int64_t length) {
  if (length <= 0) return 1;
  const int64_t pow2 = length & -length;  // the largest power of two dividing it
  return pow2 < kMaxLeaves ? pow2 : kMaxLeaves;
}

bool splits_into_pieces(int64_t length, int64_t parts) {
  return parts == 1 || (power_of_two(parts) && length % parts == 0 && leaves_of(length) % parts == 0);
}

namespace {

// A dim of global length `length`, cut into leaves_of(length) equal pieces, split into `parts`
// blocks: the length of one piece, once every block is whole pieces. `whole` says what a block
// must be whole pieces of.
int64_t piece_length(const char* op, const char* dim, int64_t length, int64_t parts, const char* pieces,
                     const char* whole) {
  const int64_t n = leaves_of(length);
  if (parts <= 1 || length == 0) return length / n;
  GLOBE_CHECK(splits_into_pieces(length, parts), "[", op, "] deterministic mode: the ",
              dim, " (length ", length, ", cut into ", n, " ", pieces, " of ", length / n, ") is split into ", parts,
              " blocks; each block must be ", whole, ", so the dim must be split evenly into a power of two of "
              "blocks dividing ", n, " (1 to ", n, " ranks along it)");
  return length / n;
}

}  // namespace

int64_t leaf_length(const char* op, const char* dim, int64_t length, int64_t parts) {
  return piece_length(op, dim, length, parts, "leaves", "a whole subtree of the leaves' sum");
}

int64_t tile_length(const char* op, const char* dim, int64_t length, int64_t parts) {
  return piece_length(op, dim, length, parts, "tiles", "whole tiles of the product");
}

void detail::rotate_leaves_for_test(bool on) { rotated = on; }
bool detail::leaves_rotated_for_test() { return rotated; }

}  // namespace globe
