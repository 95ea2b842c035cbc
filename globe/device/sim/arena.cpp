#include "globe/device/sim/arena.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "globe/base/error.h"

namespace globe::sim {

namespace {

constexpr size_t kReserve = size_t(8) << 30;  // address space only: pages are made as blocks are
constexpr int kMinClass = 8;                  // 256-byte blocks at least
constexpr int kClasses = 40;

std::atomic<char*> g_base{nullptr};  // read by the fault handler
struct sigaction g_previous;

// A fault inside the region says what happened, then hands the signal to whoever had it before
// (the default action, a sanitizer's report, MPI's): returning re-runs the faulting access.
void on_fault(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (in_region(info->si_addr)) {
    char text[512];
    const int n = std::snprintf(text, sizeof text,
                                "[sim] host code touched sim device memory at %p outside the sim device's kernels "
                                "and copies: a device tensor's bytes were read or written as if on the host "
                                "(a missing copy to the host?)\n",
                                info->si_addr);
    if (n > 0) (void)!write(2, text, size_t(n));
  }
  (void)sig;
  sigaction(SIGSEGV, &g_previous, nullptr);
}

class Region {
 public:
  Region() {
    void* p = mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    GLOBE_CHECK(p != MAP_FAILED, "[alloc] the sim device could not reserve ", kReserve >> 30,
                " GiB of address space for its memory");
    base_ = static_cast<char*>(p);
    g_base.store(base_);
    struct sigaction act = {};
    act.sa_sigaction = on_fault;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, &g_previous);
  }

  void* allocate(int index, size_t nbytes) {
    const int cls = std::max(kMinClass, int(std::bit_width(std::max<size_t>(nbytes, 1) - 1)));
    GLOBE_CHECK(cls < kClasses, "[alloc] out of memory on sim:", index, ": asked ", nbytes, " bytes");
    const size_t size = size_t(1) << cls;
    const std::lock_guard<std::mutex> lock(mu_);
    std::vector<char*>& kept = free_[index][cls];
    char* p = nullptr;
    std::vector<char*>& given_back = cold_[cls];
    if (!kept.empty()) {
      p = kept.back();
      kept.pop_back();
      cached_[index] -= size;
    } else if (!given_back.empty()) {
      p = given_back.back();
      given_back.pop_back();
    } else {
      GLOBE_CHECK(top_ + size <= kReserve, "[alloc] out of memory on sim:", index, ": asked ", nbytes, " bytes with ",
                  top_, " of the sim devices' ", kReserve, " in use or kept");
      p = base_ + top_;
      top_ += size;
      const size_t page = size_t(sysconf(_SC_PAGESIZE));
      const size_t made = (top_ + page - 1) / page * page;
      if (made > made_) {
        if (open_ > 0) protect(made_, made - made_, PROT_READ | PROT_WRITE);
        made_ = made;
      }
    }
    blocks_[p] = cls;
    return p;
  }

  void release(int index, void* p) {
    const std::lock_guard<std::mutex> lock(mu_);
    const auto it = blocks_.find(static_cast<char*>(p));
    GLOBE_CHECK(it != blocks_.end(), "[alloc] sim:", index, ": releasing memory the sim device did not allocate");
    free_[index][it->second].push_back(it->first);
    cached_[index] += size_t(1) << it->second;
    blocks_.erase(it);
  }

  size_t cached_bytes(int index) {
    const std::lock_guard<std::mutex> lock(mu_);
    return cached_[index];
  }

  // Kept blocks' pages go back to the system; the addresses stay for reuse, uncounted.
  void empty_cache(int index) {
    const std::lock_guard<std::mutex> lock(mu_);
    for (int cls = 0; cls < kClasses; ++cls) {
      for (char* p : free_[index][cls]) {
        madvise(p, size_t(1) << cls, MADV_DONTNEED);
        cold_[cls].push_back(p);
      }
      free_[index][cls].clear();
    }
    cached_[index] = 0;
  }

  void open() {
    const std::lock_guard<std::mutex> lock(mu_);
    if (open_++ == 0) protect(0, made_, PROT_READ | PROT_WRITE);
  }
  void close() {
    const std::lock_guard<std::mutex> lock(mu_);
    if (--open_ == 0) protect(0, made_, PROT_NONE);
  }

 private:
  void protect(size_t from, size_t n, int how) {
    if (n > 0) GLOBE_CHECK(mprotect(base_ + from, n, how) == 0, "[sim] mprotect of the sim devices' memory failed");
  }

  std::mutex mu_;
  char* base_ = nullptr;
  size_t top_ = 0;   // bytes handed out as blocks, from base_
  size_t made_ = 0;  // top_ rounded up to pages: what open() makes accessible
  int open_ = 0;
  std::vector<char*> free_[kDevices][kClasses];
  std::vector<char*> cold_[kClasses];  // kept blocks whose pages were given back (empty_cache)
  size_t cached_[kDevices] = {};
  std::unordered_map<char*, int> blocks_;  // live block -> its size class
};

Region& region() {
  static Region* r = new Region;  // never destroyed: storages may outlive static destructors
  return *r;
}

void check_index(int index) {
  GLOBE_CHECK(index >= 0 && index < kDevices, "[sim] sim:", index, " does not exist (", kDevices, " sim devices)");
}

}  // namespace

void* allocate(int index, size_t nbytes) {
  check_index(index);
  return region().allocate(index, nbytes);
}

void release(int index, void* p) {
  check_index(index);
  region().release(index, p);
}

size_t cached_bytes(int index) {
  check_index(index);
  return region().cached_bytes(index);
}

void empty_cache(int index) {
  check_index(index);
  region().empty_cache(index);
}

Open::Open() { region().open(); }
Open::~Open() { region().close(); }

bool in_region(const void* p) {
  const char* base = g_base.load();
  const char* c = static_cast<const char*>(p);
  return base != nullptr && c >= base && c < base + kReserve;
}

}  // namespace globe::sim
