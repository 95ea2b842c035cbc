// The C++ layers, as objects a Python globe.nn.Module wraps (python/globe/nn.py): their parameters
// are the C++ module's own tensors, so the same initialisation (and the same losses) as in C++.
#include "bind.h"

namespace globe::py {

namespace {

pyb::list named(const std::vector<std::pair<std::string, Tensor>>& items) {
  pyb::list out;
  for (const auto& [k, v] : items) out.append(pyb::make_tuple(k, v));
  return out;
}

}  // namespace

void bind_nn(pyb::module_& m) {
  using namespace nn;
  pyb::class_<Module, std::shared_ptr<Module>>(m, "CppModule")
      .def("named_parameters", [](const Module& mod) { return named(mod.named_parameters()); })
      .def("named_buffers", [](const Module& mod) { return named(mod.named_buffers()); })
      .def("to_global", [](Module& mod, const Placement& p, const pyb::object& sbp) {
        if (sbp.is_none()) mod.to_global(p);
        else mod.to_global(p, to_nd_sbp(sbp));
      }, pyb::arg("placement"), pyb::arg("sbp") = pyb::none())
      .def("distribute", [](Module& mod, const Placement& p, const pyb::dict& plan, const pyb::object& default_sbp) {
        std::vector<std::pair<std::string, NdSbp>> v;
        for (const auto& [k, s] : plan) v.emplace_back(k.cast<std::string>(), to_nd_sbp(pyb::reinterpret_borrow<pyb::object>(s)));
        mod.distribute(p, v, to_nd_sbp(default_sbp));
      }, pyb::arg("placement"), pyb::arg("plan"), pyb::arg("default_sbp"))
      .def("to", [](Module& mod, DType dt) { mod.to(dt); })
      .def("train", [](Module& mod, bool on) { mod.train(on); }, pyb::arg("mode") = true);
  pyb::class_<UnaryModule, Module, std::shared_ptr<UnaryModule>>(m, "CppUnaryModule")
      .def("forward", &UnaryModule::forward);
  pyb::class_<Linear, UnaryModule, std::shared_ptr<Linear>>(m, "CppLinear")
      .def(pyb::init<int64_t, int64_t, bool>(), pyb::arg("in_features"), pyb::arg("out_features"),
           pyb::arg("bias") = true);
  pyb::class_<ColumnParallelLinear, Linear, std::shared_ptr<ColumnParallelLinear>>(m, "CppColumnParallelLinear")
      .def(pyb::init<int64_t, int64_t, const Placement&, bool, int64_t>(), pyb::arg("in_features"),
           pyb::arg("out_features"), pyb::arg("placement"), pyb::arg("bias") = true, pyb::arg("tp_axis") = -1);
  pyb::class_<RowParallelLinear, Linear, std::shared_ptr<RowParallelLinear>>(m, "CppRowParallelLinear")
      .def(pyb::init<int64_t, int64_t, const Placement&, bool, int64_t>(), pyb::arg("in_features"),
           pyb::arg("out_features"), pyb::arg("placement"), pyb::arg("bias") = true, pyb::arg("tp_axis") = -1);
  pyb::class_<ReLU, UnaryModule, std::shared_ptr<ReLU>>(m, "CppReLU").def(pyb::init<>());
  pyb::class_<GELU, UnaryModule, std::shared_ptr<GELU>>(m, "CppGELU")
      .def(pyb::init<bool>(), pyb::arg("tanh_approximation") = false);
  pyb::class_<Tanh, UnaryModule, std::shared_ptr<Tanh>>(m, "CppTanh").def(pyb::init<>());
  pyb::class_<Dropout, UnaryModule, std::shared_ptr<Dropout>>(m, "CppDropout").def(pyb::init<double>(), pyb::arg("p") = 0.5);
  pyb::class_<Embedding, UnaryModule, std::shared_ptr<Embedding>>(m, "CppEmbedding")
      .def(pyb::init<int64_t, int64_t>(), pyb::arg("num_embeddings"), pyb::arg("embedding_dim"));
  pyb::class_<LayerNorm, UnaryModule, std::shared_ptr<LayerNorm>>(m, "CppLayerNorm")
      .def(pyb::init([](const pyb::object& shape, double eps, bool affine) {
             return std::make_shared<LayerNorm>(to_shape(shape), eps, affine);
           }),
           pyb::arg("normalized_shape"), pyb::arg("eps") = 1e-5, pyb::arg("elementwise_affine") = true);
  m.def("rebind", [](const Tensor& slot, const Tensor& value) { slot.rebind(value); },
        "the tensor `slot` takes `value`'s data and layout in place (parameter identity)");
}

}  // namespace globe::py
