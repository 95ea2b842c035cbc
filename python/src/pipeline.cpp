// The pipeline (globe/pipeline): Python modules as its blocks. Each block is a C++ module that
// holds the Python module's parameters (the same tensors) and calls its forward, so the
// pipeline moves them to their stage's placement and runs them in the schedule's order.
#include <pybind11/functional.h>

#include "bind.h"

namespace globe::py {

namespace {

class PyBlock final : public nn::UnaryModule {
 public:
  explicit PyBlock(pyb::object module) : module_(std::move(module)) {
    const pyb::list named = module_.attr("named_parameters")().cast<pyb::list>();
    slots_.reserve(named.size());  // register_parameter keeps references into slots_
    for (const pyb::handle item : named) {
      const auto pair = item.cast<std::pair<std::string, Tensor>>();
      slots_.push_back(pair.second);
      register_parameter(pair.first, slots_.back(), pair.second.requires_grad());
    }
  }
  Tensor forward(const Tensor& x) override { return module_(x).cast<Tensor>(); }

 private:
  pyb::object module_;
  std::vector<Tensor> slots_;
};

struct PyPipeline {
  std::vector<std::unique_ptr<PyBlock>> modules;
  std::unique_ptr<pipeline::Pipeline> pipe;
};

std::vector<nn::UnaryModule*> blocks_of(PyPipeline& holder, const pyb::list& modules) {
  std::vector<nn::UnaryModule*> out;
  for (const pyb::handle m : modules) {
    holder.modules.push_back(std::make_unique<PyBlock>(pyb::reinterpret_borrow<pyb::object>(m)));
    out.push_back(holder.modules.back().get());
  }
  return out;
}

}  // namespace

void bind_pipeline(pyb::module_& m) {
  pyb::class_<pipeline::StepResult>(m, "StepResult")
      .def_readonly("loss", &pipeline::StepResult::loss)
      .def_readonly("peak_alive", &pipeline::StepResult::peak_alive)
      .def_readonly("busy_seconds", &pipeline::StepResult::busy_seconds)
      .def_readonly("step_seconds", &pipeline::StepResult::step_seconds);
  pyb::class_<PyPipeline>(m, "Pipeline")
      .def(pyb::init([](std::vector<Placement> groups, const pyb::list& blocks, const std::string& schedule,
                        int microbatches, int chunks, std::vector<int> stage_of_block, const pyb::list& first,
                        const pyb::list& last) {
             auto holder = std::make_unique<PyPipeline>();
             auto b = blocks_of(*holder, blocks), f = blocks_of(*holder, first), l = blocks_of(*holder, last);
             pipeline::Options o;
             o.schedule = schedule;
             o.microbatches = microbatches;
             o.chunks = chunks;
             o.stage_of_block = std::move(stage_of_block);
             holder->pipe = std::make_unique<pipeline::Pipeline>(std::move(groups), b, o, f, l);
             return holder;
           }),
           pyb::arg("groups"), pyb::arg("blocks"), pyb::arg("schedule") = "1f1b", pyb::arg("microbatches") = 1,
           pyb::arg("chunks") = 1, pyb::arg("stage_of_block") = std::vector<int>{}, pyb::arg("first") = pyb::list(),
           pyb::arg("last") = pyb::list())
      .def("step", [](PyPipeline& p, const Tensor& x, const Tensor& y, const pipeline::LossFn& loss) {
        return p.pipe->step(x, y, loss);
      }, pyb::arg("input"), pyb::arg("target"), pyb::arg("loss"))
      .def("evaluate", [](PyPipeline& p, const Tensor& x, const Tensor& y, const pipeline::LossFn& loss) {
        return p.pipe->evaluate(x, y, loss);
      }, pyb::arg("input"), pyb::arg("target"), pyb::arg("loss"))
      .def("describe", [](const PyPipeline& p) { return p.pipe->describe(); })
      .def("schedule", [](const PyPipeline& p) { return p.pipe->schedule().to_string(); })
      .def_property_readonly("stages", [](const PyPipeline& p) { return p.pipe->stages(); });
}

}  // namespace globe::py
