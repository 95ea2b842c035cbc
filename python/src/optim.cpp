// Optimizers over lists of tensors, and gradient clipping.
#include "bind.h"

namespace globe::py {

void bind_optim(pyb::module_& m) {
  using namespace optim;
  pyb::class_<Optimizer, std::shared_ptr<Optimizer>>(m, "Optimizer")
      .def("step", &Optimizer::step)
      .def("zero_grad", &Optimizer::zero_grad)
      .def("state_dict", [](const Optimizer& o) { return to_dict(o.state_dict()); })
      .def("load_state_dict", [](Optimizer& o, const pyb::dict& d) { o.load_state_dict(to_state_dict(d)); })
      .def("set_zero_stage", &Optimizer::set_zero_stage)
      .def_property_readonly("zero_stage", &Optimizer::zero_stage)
      .def("state_bytes", &Optimizer::state_bytes);
  pyb::class_<SGD, Optimizer, std::shared_ptr<SGD>>(m, "SGD")
      .def(pyb::init([](std::vector<Tensor> params, double lr, double momentum, double dampening, double weight_decay,
                        bool nesterov) {
             return std::make_shared<SGD>(std::move(params), SGDOptions{lr, momentum, dampening, weight_decay, nesterov});
           }),
           pyb::arg("params"), pyb::arg("lr") = 0.01, pyb::arg("momentum") = 0.0, pyb::arg("dampening") = 0.0,
           pyb::arg("weight_decay") = 0.0, pyb::arg("nesterov") = false)
      // The learning rate every step uses from now on (python/globe/optim.py sets it from param_groups).
      .def_property("lr", [](SGD& o) { return o.options().lr; }, [](SGD& o, double lr) { o.options().lr = lr; });
  auto adam = [](bool decoupled, double default_wd) {
    // `params`: tensors, or torch's parameter groups [{"params": [...], "weight_decay": wd}, ...]
    // (a group without "weight_decay" takes the optimizer's).
    return [decoupled, default_wd](const pyb::list& params, double lr, std::pair<double, double> betas, double eps,
                                   pyb::object weight_decay) {
      const double wd = weight_decay.is_none() ? default_wd : weight_decay.cast<double>();
      const AdamOptions o{lr, betas.first, betas.second, eps, wd};
      if (params.empty() || !pyb::isinstance<pyb::dict>(params[0]))
        return std::make_shared<Adam>(params.cast<std::vector<Tensor>>(), o, decoupled);
      std::vector<ParamGroup> groups;
      for (const pyb::handle& g : params) {
        if (!pyb::isinstance<pyb::dict>(g)) throw pyb::type_error("params: every parameter group must be a dict");
        const pyb::dict d = g.cast<pyb::dict>();
        if (!d.contains("params")) throw pyb::value_error("params: a parameter group needs \"params\"");
        groups.push_back({d["params"].cast<std::vector<Tensor>>(),
                          d.contains("weight_decay") ? d["weight_decay"].cast<double>() : wd});
      }
      return std::make_shared<Adam>(groups, o, decoupled);
    };
  };
  pyb::class_<Adam, Optimizer, std::shared_ptr<Adam>>(m, "Adam")
      .def(pyb::init(adam(false, 0.0)), pyb::arg("params"), pyb::arg("lr") = 1e-3,
           pyb::arg("betas") = std::make_pair(0.9, 0.999), pyb::arg("eps") = 1e-8, pyb::arg("weight_decay") = pyb::none())
      .def_property("lr", [](Adam& o) { return o.options().lr; }, [](Adam& o, double lr) { o.options().lr = lr; });
  m.def("AdamW", adam(true, 0.01), pyb::arg("params"), pyb::arg("lr") = 1e-3,
        pyb::arg("betas") = std::make_pair(0.9, 0.999), pyb::arg("eps") = 1e-8, pyb::arg("weight_decay") = pyb::none());
  m.def("warmup_cosine_lr", &warmup_cosine_lr, pyb::arg("step"), pyb::arg("warmup"), pyb::arg("decay_steps"),
        pyb::arg("max_lr"), pyb::arg("min_lr"));
  m.def("clip_grad_norm_", &clip_grad_norm, pyb::arg("parameters"), pyb::arg("max_norm"));
  // Dynamic loss scaling for float16 (optim/grad_scaler.h); python/globe/amp.py wraps it.
  pyb::class_<GradScaler>(m, "GradScaler")
      .def(pyb::init([](double init_scale, double growth_factor, double backoff_factor, int64_t growth_interval) {
             return GradScaler({init_scale, growth_factor, backoff_factor, growth_interval});
           }),
           pyb::arg("init_scale"), pyb::arg("growth_factor"), pyb::arg("backoff_factor"), pyb::arg("growth_interval"))
      .def("scale", &GradScaler::scale)
      .def("unscale", &GradScaler::unscale)
      .def("step", &GradScaler::step)
      .def("update", &GradScaler::update)
      .def("get_scale", &GradScaler::get_scale)
      .def_property_readonly("steps_skipped", &GradScaler::steps_skipped);
}

}  // namespace globe::py
