// Looking at a kernel table entry's arguments, for tables that call another table's entry (the
// dispatcher, kernels/host_memory_table.h).
#pragma once

#include <type_traits>

#include "globe/core/tensor.h"

namespace globe::kernels {

// The entry's first defined tensor argument (every entry has one: what names its device), or
// nullptr.
template <class... A>
const Tensor* first_tensor(const A&... args) {
  const Tensor* first = nullptr;
  auto note = [&first](const auto& a) {
    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Tensor>)
      if (first == nullptr && a.defined()) first = &a;
  };
  (note(args), ...);
  return first;
}

}  // namespace globe::kernels
