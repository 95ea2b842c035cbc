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
  // The registry every Python module keeps its parameters, buffers and children in (nn.py): a
  // plain Module for a Python-defined one, the C++ layer itself for a wrapped layer.
  pyb::class_<Module, std::shared_ptr<Module>>(m, "CppModule")
      .def(pyb::init<>())
      .def("named_parameters", [](const Module& mod) { return named(mod.named_parameters()); })
      .def("named_buffers", [](const Module& mod) { return named(mod.named_buffers()); })
      .def("parameters", &Module::parameters)
      .def("set_parameter", &Module::set_parameter, pyb::arg("name"), pyb::arg("value"))
      .def("set_buffer", &Module::set_buffer, pyb::arg("name"), pyb::arg("value"))
      .def("set_module", &Module::set_module, pyb::arg("name"), pyb::arg("child"))
      .def("get", [](const Module& mod, const std::string& name) -> pyb::object {
        Tensor t = mod.get(name);
        return t.defined() ? pyb::cast(t) : pyb::none();
      }, pyb::arg("name"))
      .def("kind_of", &Module::kind_of, pyb::arg("name"))
      .def("state_dict", [](const Module& mod) { return to_dict(mod.state_dict()); })
      .def("load_state_dict", [](Module& mod, const pyb::dict& state, bool strict) {
        auto keys = mod.load_state_dict(to_state_dict(state), strict);
        return pyb::make_tuple(keys.missing, keys.unexpected);
      }, pyb::arg("state"), pyb::arg("strict") = true)
      .def("zero_grad", &Module::zero_grad)
      .def_property_readonly("training", &Module::is_training)
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
      .def("to_device", [](Module& mod, const std::string& d) { mod.to(Device::parse(d)); })
      .def_property_readonly("fully_sharded", [](const Module& mod) { return !mod.gather_layouts().empty(); })
      .def_property_readonly("transforms_parameters", &Module::transforms_parameters)
      .def_property_readonly("name", &Module::name)
      .def_property_readonly("compute_dtype", &Module::compute_dtype)
      .def("train", [](Module& mod, bool on) { mod.train(on); }, pyb::arg("mode") = true);
  // A C++ layer's call: its forward, with its marks (fully sharded, recomputed) honoured.
  pyb::class_<UnaryModule, Module, std::shared_ptr<UnaryModule>>(m, "CppUnaryModule")
      .def("forward", [](UnaryModule& mod, const Tensor& x) { return mod(x); });
  // ZeRO-3 (nn/fully_shard.h) shards a module's parameters in place; mixed precision
  // (nn/mixed_precision.h) marks a model to compute in bfloat16; with_parameters_in_use runs a
  // Python forward with the parameters as the marks say (gathered, cast), whatever it returns.
  m.def("fully_shard", [](Module& mod, bool reshard_after_forward) {
    fully_shard(mod, {.reshard_after_forward = reshard_after_forward});
  }, pyb::arg("module"), pyb::arg("reshard_after_forward") = true);
  // The modules outlive the links: Python's globe.nn.set_prefetch keeps them referenced.
  m.def("set_prefetch", [](const std::vector<Module*>& modules, int depth) { set_prefetch(modules, depth); },
        pyb::arg("modules"), pyb::arg("depth"));
  m.def("mixed_precision", [](Module& mod, DType param_dtype, DType reduce_dtype) {
    const MixedPrecision policy{param_dtype, reduce_dtype};
    mixed_precision(mod, policy);
    return describe(policy);
  }, pyb::arg("module"), pyb::arg("param_dtype"), pyb::arg("reduce_dtype"));
  m.def("cast_input", [](const Module& mod, const Tensor& x) { return cast_input(mod, x); });
  m.def("with_parameters_in_use", [](Module& mod, const pyb::function& fn) {
    pyb::object result;
    with_parameters_in_use(mod, [&] {
      result = fn();
      return Tensor();
    });
    return result;
  }, pyb::arg("module"), pyb::arg("fn"));
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
  // Megatron's two operators around a tensor-parallel region (globe/nn/parallel_layers.h).
  m.def("reduce_over_tp", &nn::reduce_over_tp, pyb::arg("input"), pyb::arg("tp_axis") = -1);
  m.def("enter_tp_region", &nn::enter_tp_region, pyb::arg("input"), pyb::arg("tp_axis") = -1);
  pyb::class_<RMSNorm, UnaryModule, std::shared_ptr<RMSNorm>>(m, "CppRMSNorm")
      .def(pyb::init<int64_t, double>(), pyb::arg("dim"), pyb::arg("eps") = 1e-6);
  pyb::class_<LayerNorm, UnaryModule, std::shared_ptr<LayerNorm>>(m, "CppLayerNorm")
      .def(pyb::init([](const pyb::object& shape, double eps, bool affine) {
             return std::make_shared<LayerNorm>(to_shape(shape), eps, affine);
           }),
           pyb::arg("normalized_shape"), pyb::arg("eps") = 1e-5, pyb::arg("elementwise_affine") = true);
  // torch.nn.init: in place, returning the tensor.
  namespace ini = nn::init;
  m.def("init_uniform_", &ini::uniform_, pyb::arg("tensor"), pyb::arg("a") = 0.0, pyb::arg("b") = 1.0);
  m.def("init_normal_", &ini::normal_, pyb::arg("tensor"), pyb::arg("mean") = 0.0, pyb::arg("std") = 1.0);
  m.def("init_constant_", &ini::constant_, pyb::arg("tensor"), pyb::arg("val"));
  m.def("init_zeros_", &ini::zeros_, pyb::arg("tensor"));
  m.def("init_ones_", &ini::ones_, pyb::arg("tensor"));
  m.def("init_xavier_uniform_", &ini::xavier_uniform_, pyb::arg("tensor"), pyb::arg("gain") = 1.0);
  m.def("init_xavier_normal_", &ini::xavier_normal_, pyb::arg("tensor"), pyb::arg("gain") = 1.0);
  m.def("init_kaiming_uniform_", &ini::kaiming_uniform_, pyb::arg("tensor"), pyb::arg("a") = 0.0,
        pyb::arg("mode") = "fan_in", pyb::arg("nonlinearity") = "leaky_relu");
  m.def("init_kaiming_normal_", &ini::kaiming_normal_, pyb::arg("tensor"), pyb::arg("a") = 0.0,
        pyb::arg("mode") = "fan_in", pyb::arg("nonlinearity") = "leaky_relu");
  m.def("init_calculate_gain", &ini::calculate_gain, pyb::arg("nonlinearity"), pyb::arg("param") = 0.01);
  m.def("rebind", [](const Tensor& slot, const Tensor& value) { slot.rebind(value); },
        "the tensor `slot` takes `value`'s data and layout in place (parameter identity)");
}

}  // namespace globe::py
