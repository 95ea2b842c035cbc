// run_on_threads (worker_pool.h): helpers wait for a new generation number; the caller publishes
// the work, bumps the generation, does its share, and waits until every helper kept has answered
// that generation (those beyond the call's thread count answer without working), so no helper is
// still looking at one call's work when the next is published.
#include "globe/kernels/cpu/worker_pool.h"

#include <immintrin.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

namespace globe::kernels {

namespace {

// Spins a parked helper (or the waiting caller) makes before it sleeps (helper) or yields
// (caller): about the gap between two products of one step.
constexpr int kSpins = 1 << 14;

// Never destroyed, its helpers detached: at exit they stay parked on memory that outlives them.
// A forked child inherits the pool but not its threads, so a process other than the one that
// started them runs every call on its own thread (the same bits) rather than wait for helpers
// that do not exist there.
class Pool {
 public:
  void run(int threads, const std::function<void()>& work) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || threads <= 1) return work();
    if (helpers_ == 0) owner_ = getpid();
    else if (getpid() != owner_) return work();
    for (; helpers_ < threads - 1; ++helpers_) std::thread([this, index = helpers_] { serve(index); }).detach();
    work_ = &work;
    wanted_.store(threads - 1);
    pending_.store(helpers_);
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
      if (index < wanted_.load()) (*work_)();  // a call may want fewer helpers than are kept
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::mutex busy_;
  int helpers_ = 0;  // started so far
  pid_t owner_ = 0;  // the process that started them
  const std::function<void()>* work_ = nullptr;
  std::atomic<int> wanted_{0}, pending_{0};
  std::atomic<uint32_t> generation_{0};
};

}  // namespace

void run_on_threads(int threads, const std::function<void()>& work) {
  static Pool* pool = new Pool();
  pool->run(threads, work);
}

}  // namespace globe::kernels
