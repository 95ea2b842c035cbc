// A node of the autograd graph: the op that produced one tensor, with edges to its inputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "globe/base/trace.h"
#include "globe/core/tensor.h"

namespace globe {

class Node {
 public:
  explicit Node(std::vector<Tensor> inputs)
      : inputs_(std::move(inputs)),
        serial_(next_serial().fetch_add(1, std::memory_order_relaxed)),
        module_(trace::on() ? trace::current_module() : std::string()) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // Gradients w.r.t. each input from the gradient of this node's output. Entry i may be left
  // undefined when needs[i] is false.
  virtual std::vector<Tensor> apply(const Tensor& grad_output, const std::vector<bool>& needs) = 0;

  // Whether running this node on this rank would wait for data from ranks that are still busy
  // with the same backward elsewhere (a cross-placement to_global whose gradient this rank only
  // receives). The engine pauses such a backward there (engine.h).
  virtual bool waits_for_peer() const { return false; }

  const std::vector<Tensor>& inputs() const { return inputs_; }

  // Keeps only what a later weight-gradient pass needs (after run_input_backward): the inputs'
  // values, not the graph behind them (an input that is not a leaf becomes a detached alias, so
  // the nodes above it and what they saved are freed), and not the forward output where the
  // gradient does not read it.
  virtual void keep_for_weight_pass() {
    for (Tensor& in : inputs_)
      if (in.grad_fn()) in = in.detach();
  }
  // Drops everything the node holds once its one backward has run and nothing will run it
  // again (the input-gradient pass of a split backward frees saved tensors as it goes).
  virtual void release_saved() { inputs_.clear(); }

  // Nodes are numbered in the order they were made: a node numbered at or after
  // `next_serial()` read at some point was recorded after it (how a recomputed region,
  // autograd/checkpoint.h, tells its own nodes from those of the graph it hangs on).
  uint64_t serial() const { return serial_; }

  // The module whose forward made this node (dotted; "" outside any module, or when no trace was
  // listening then): the engine runs its backward inside a span of that module, so a backward
  // collective is counted under the module, as its forward ones are.
  const std::string& module() const { return module_; }
  static std::atomic<uint64_t>& next_serial() {
    static std::atomic<uint64_t> n{0};
    return n;
  }

 private:
  std::vector<Tensor> inputs_;
  uint64_t serial_;
  std::string module_;
};

}  // namespace globe
