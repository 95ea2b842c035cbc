#include "globe/core/memory.h"

#include <atomic>

namespace globe {

namespace {
std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
}  // namespace

namespace detail {
void count_allocation(int64_t delta) {
  const int64_t now = g_current.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace detail

MemoryStats memory_stats() { return {g_current.load(), g_peak.load()}; }

void reset_peak_memory() { g_peak.store(g_current.load()); }

}  // namespace globe
