// run_on_threads (worker_pool.h): helpers wait for a new generation number; the caller publishes
// the work, bumps the generation, does its share, and waits until every helper kept has answered
// that generation (those beyond the call's thread count answer without working), so no helper is
// still looking at one call's work when the next is published.
#include "globe/kernels/worker_pool.h"

#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace globe::kernels {

namespace {

// Spins a parked helper (or the waiting caller) makes before it sleeps (helper) or yields
// (caller): about the gap between two products of one step.
constexpr int kSpins = 1 << 14;

class Pool {
 public:
  ~Pool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& t : helpers_) t.join();
  }

  void run(int threads, const std::function<void()>& work) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || threads <= 1) return work();
    while (int(helpers_.size()) < threads - 1) {
      const int index = int(helpers_.size());
      helpers_.emplace_back([this, index] { serve(index); });
    }
    work_ = &work;
    wanted_.store(threads - 1);
    pending_.store(int(helpers_.size()));
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    std::exception_ptr failed;
    try {
      work();
    } catch (...) {
      failed = std::current_exception();
    }
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
      if (spin < kSpins) _mm_pause();
      else std::this_thread::yield();
    }
    if (failed) std::rethrow_exception(failed);
  }

 private:
  void serve(int index) {
    uint32_t seen = 0;
    for (;;) {
      uint32_t now = generation_.load(std::memory_order_acquire);
      for (int spin = 0; now == seen && spin < kSpins; ++spin) {
        _mm_pause();
        now = generation_.load(std::memory_order_acquire);
      }
      if (now == seen) {
        generation_.wait(seen, std::memory_order_acquire);
        continue;
      }
      seen = now;
      if (stop_.load()) return;
      if (index < wanted_.load()) (*work_)();  // a call may want fewer helpers than are kept
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::mutex busy_;
  std::vector<std::thread> helpers_;
  const std::function<void()>* work_ = nullptr;
  std::atomic<int> wanted_{0}, pending_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace

void run_on_threads(int threads, const std::function<void()>& work) {
  static Pool pool;
  pool.run(threads, work);
}

}  // namespace globe::kernels
