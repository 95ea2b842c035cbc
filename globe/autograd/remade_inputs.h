// Inputs whose bytes a layer above releases while the graph still refers to them and makes again
// when a backward node reads them: the one interface the engine calls for them, as it calls
// LeafGradients for the gradients. A fully sharded module's gathered parameters use it
// (nn/parameter_use.cpp, nn/remade_storage.cpp: released after the module's forward, gathered
// again for its backward, a few modules ahead). The engine knows only a pass's order of nodes;
// which bytes are released, how they are made again and how far ahead is the implementation's.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace globe {

class Node;

class RemadeInputs {
 public:
  // One backward pass's plan over its nodes (`order`, each node before those that feed it).
  class Pass {
   public:
    virtual ~Pass() = default;
    virtual void before(size_t node) = 0;  // order[node] is about to run: its inputs' bytes are there after
    virtual void after(size_t node) = 0;   // order[node] ran, or was skipped (no gradient reached it)
    virtual void done() = 0;               // the pass ended: nothing of it stays in flight
  };
  virtual ~RemadeInputs() = default;
  // The plan of a pass that runs every node (`releases`: a full backward, which may release bytes
  // after their last reader) or of one that stops short (a split or targeted pass: it only makes
  // bytes again). Null when nothing of `order` is released.
  virtual std::unique_ptr<Pass> plan(const std::vector<std::shared_ptr<Node>>& order, bool releases) = 0;
};

// The installed implementation, or null (nothing is ever released).
RemadeInputs* remade_inputs();
void set_remade_inputs(RemadeInputs* inputs);

}  // namespace globe
