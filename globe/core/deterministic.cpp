#include "globe/core/deterministic.h"

#include <algorithm>
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
  if (length % kLeafLength == 0) return length / kLeafLength;
  int64_t n = std::min(length & -length, kMaxOddLeaves);  // the largest power of two dividing it, capped
  while (n > 1 && length / n < kLeafLength) n /= 2;
  return n;
}

bool splits_into_leaves(int64_t length, int64_t parts) {
  return parts == 1 || (power_of_two(parts) && leaves_of(length) % parts == 0);
}

int64_t leaf_length(const char* op, const char* dim, int64_t length, int64_t parts) {
  const int64_t leaves = leaves_of(length);
  GLOBE_CHECK(length == 0 || splits_into_leaves(length, parts), "[", op, "] deterministic mode: the ", dim, " (length ",
              length, ", cut into ", leaves, " leaves of ", length / leaves, ") is split into ", parts,
              " blocks; each block must be a whole subtree of the leaves' sum, so the dim must be split evenly into a "
              "power of two of blocks dividing its ",
              leaves, " leaves");
  return length / leaves;
}

void check_microbatches(const char* op, int64_t rows, int64_t count) {
  if (!deterministic() || count <= 1) return;
  const int64_t each = rows / count;
  GLOBE_CHECK(power_of_two(count) && rows % count == 0 && each % kLeafLength == 0, "[", op,
              "] deterministic mode: a batch of ", rows, " rows in ", count, " micro-batches",
              rows % count == 0 ? " of " + std::to_string(each) + " rows" : std::string(" of unequal sizes"),
              " would not have the whole batch's bits: the sums over the batch (a bias's gradient sums its ",
              "rows, a weight's its rows times the tokens) are cut into leaves of ", kLeafLength,
              " rows, and only micro-batches that each hold the same multiple of ", kLeafLength,
              " rows, a power of two of them, cut those sums where the batch's tree does (docs/design.md §10). ",
              "Cut the batch into 2, 4, 8, ... micro-batches of ", kLeafLength, ", ", 2 * kLeafLength,
              ", ... rows each, or take it as one micro-batch");
}

void detail::rotate_leaves_for_test(bool on) { rotated = on; }
bool detail::leaves_rotated_for_test() { return rotated; }

int64_t detail::leaf_in_test_order(int64_t l, int64_t n) { return rotated ? (l + 1) % n : l; }

}  // namespace globe
