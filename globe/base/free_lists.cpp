#include "globe/base/free_lists.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace globe::detail {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kBuiltOn = false;  // the sanitizer must see every free
#else
constexpr bool kBuiltOn = true;
#endif

// GLOBE_FREE_LISTS=0 turns the lists off, so that a memory checker run by hand (valgrind) sees
// every free too. Read once, at load: before that (another static initialiser) the lists are off.
const bool g_on = [] {
  const char* v = std::getenv("GLOBE_FREE_LISTS");
  return kBuiltOn && !(v != nullptr && std::string_view(v) == "0");
}();

constexpr size_t kSources = 2, kClasses = kKeptBlockMaxBytes / 64, kKeep = 16;

// Plain data, so it lives for the whole thread with no destructor of its own: a block freed
// during exit, after the lists were emptied, still finds them (marked closed).
struct Lists {
  void* blocks[kSources][kClasses][kKeep];
  uint8_t count[kSources][kClasses];
  bool opened, closed;
};
thread_local Lists t_lists;

void free_block(size_t source, void* p) {
  if (BlockSource(source) == BlockSource::aligned64) std::free(p);
  else ::operator delete(p);
}

// Empties this thread's lists when it ends.
struct Closer {
  ~Closer() {
    t_lists.closed = true;
    for (size_t s = 0; s < kSources; ++s)
      for (size_t c = 0; c < kClasses; ++c)
        while (t_lists.count[s][c] > 0) free_block(s, t_lists.blocks[s][c][--t_lists.count[s][c]]);
  }
};
thread_local Closer t_closer;

size_t class_of(size_t bytes) { return kept_block_bytes(bytes) / 64 - 1; }

}  // namespace

void* take_block(BlockSource source, size_t bytes) {
  if (!g_on || bytes > kKeptBlockMaxBytes) return nullptr;
  uint8_t& n = t_lists.count[size_t(source)][class_of(bytes)];
  return n > 0 ? t_lists.blocks[size_t(source)][class_of(bytes)][--n] : nullptr;
}

bool keep_block(BlockSource source, void* p, size_t bytes) {
  if (!g_on || bytes > kKeptBlockMaxBytes || t_lists.closed) return false;
  if (!t_lists.opened) {
    (void)&t_closer;  // the first use of a thread_local with a destructor registers it
    t_lists.opened = true;
  }
  uint8_t& n = t_lists.count[size_t(source)][class_of(bytes)];
  if (n == kKeep) return false;
  t_lists.blocks[size_t(source)][class_of(bytes)][n++] = p;
  return true;
}

}  // namespace globe::detail
