// The original tutorial's ToyModel: two linear layers, ReLU and an MSE loss. Shared by the
// data-parallel and the save/load examples.
#pragma once

#include <globe/globe.h>

namespace example {

namespace nn = globe::nn;
using globe::Tensor;

struct ToyModel : nn::Module {
  nn::Linear net1{10, 20};
  nn::ReLU relu;
  nn::Linear net2{20, 16};
  nn::MSELoss loss_fn;

  ToyModel() { register_modules({{"net1", net1}, {"net2", net2}}); }  // names -> state_dict keys

  Tensor forward(const Tensor& x, const Tensor& labels) {
    return loss_fn(net2(relu(net1(x))), labels);
  }
};

}  // namespace example
