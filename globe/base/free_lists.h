// Per-thread lists of freed small blocks, by size class (multiples of 64 bytes, up to 1 KiB), that
// the next allocation of the class takes back. The framework's short-lived small objects (a tiny
// tensor's bytes, its TensorImpl, Storage and global metadata) then skip malloc and free, about
// 150 instructions a block (bench/RESULTS.md, "Boxing": the 4-byte P -> B). A block freed on
// another thread joins that thread's lists; a thread's lists are emptied when it ends, and blocks
// freed after that go straight back to the heap. Off under AddressSanitizer and ThreadSanitizer,
// which must see each free, and with GLOBE_FREE_LISTS=0 (for valgrind).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace globe::detail {

// Where a kept block came from, and so how it is freed when it leaves the lists.
enum class BlockSource : unsigned char {
  aligned64,     // std::aligned_alloc(64, bytes), freed with std::free
  operator_new,  // ::operator new(bytes), freed with ::operator delete
};

constexpr size_t kKeptBlockMaxBytes = 1024;
// The size a block of `bytes` is allocated with, so that any request of its class may reuse it.
constexpr size_t kept_block_bytes(size_t bytes) { return bytes <= 64 ? 64 : (bytes + 63) / 64 * 64; }

// A kept block of kept_block_bytes(bytes) from `source`, or nullptr (none kept, or too large).
void* take_block(BlockSource source, size_t bytes);
// Keeps `p` (a block of kept_block_bytes(bytes) from `source`) for reuse; false: the caller frees it.
bool keep_block(BlockSource source, void* p, size_t bytes);

// An allocator over the lists, for std::allocate_shared: the object and its control block come
// from one kept block.
template <class T>
struct KeptAllocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "kept blocks have operator new's alignment");
  KeptAllocator() = default;
  template <class U>
  KeptAllocator(const KeptAllocator<U>&) {}  // NOLINT: rebinding, as allocators do
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = take_block(BlockSource::operator_new, bytes);
    return static_cast<T*>(p ? p : ::operator new(kept_block_bytes(bytes)));
  }
  void deallocate(T* p, size_t n) {
    if (!keep_block(BlockSource::operator_new, p, n * sizeof(T))) ::operator delete(p);
  }
  template <class U>
  bool operator==(const KeptAllocator<U>&) const {
    return true;
  }
};

// std::make_shared through the lists.
template <class T, class... Args>
std::shared_ptr<T> make_kept(Args&&... args) {
  return std::allocate_shared<T>(KeptAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace globe::detail
