// A node of the autograd graph: the op that produced one tensor, with edges to its inputs.
#pragma once

#include <string>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

class Node {
 public:
  explicit Node(std::vector<Tensor> inputs) : inputs_(std::move(inputs)) {}
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

 private:
  std::vector<Tensor> inputs_;
};

}  // namespace globe
