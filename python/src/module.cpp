// The extension module globe._globe: errors, then each part's bindings.
#include "bind.h"

namespace globe::py {

Shape to_shape(const pyb::object& seq) {
  if (pyb::isinstance<pyb::int_>(seq)) return {seq.cast<int64_t>()};
  Shape s;
  for (const pyb::handle h : seq) s.push_back(h.cast<int64_t>());
  return s;
}

namespace {
std::string type_name(const pyb::handle& h) { return pyb::str(pyb::type::handle_of(h).attr("__name__")); }
}  // namespace

Placement to_placement(const pyb::object& placement) {
  if (!pyb::isinstance<Placement>(placement))
    throw pyb::type_error("placement= takes a globe.placement(...), got " + type_name(placement) + " " +
                          std::string(pyb::repr(placement)));
  return placement.cast<Placement>();
}

NdSbp to_nd_sbp(const pyb::object& sbp) {
  if (pyb::isinstance<Sbp>(sbp)) return NdSbp(sbp.cast<Sbp>());
  if (pyb::isinstance<NdSbp>(sbp)) return sbp.cast<NdSbp>();
  const auto bad = [&] {
    return pyb::type_error("sbp= takes globe.sbp.split(d), broadcast or partial_sum, or a tuple of them (one per "
                           "mesh axis), got " + type_name(sbp) + " " + std::string(pyb::repr(sbp)));
  };
  if (!pyb::isinstance<pyb::sequence>(sbp) || pyb::isinstance<pyb::str>(sbp)) throw bad();
  std::vector<Sbp> v;
  for (const pyb::handle h : sbp) {
    if (!pyb::isinstance<Sbp>(h)) throw bad();
    v.push_back(h.cast<Sbp>());
  }
  return NdSbp(v);
}

pyb::dict to_dict(const StateDict& sd) {
  pyb::dict d;
  for (const auto& [k, v] : sd) d[pyb::str(k)] = v;
  return d;
}

StateDict to_state_dict(const pyb::dict& d) {
  StateDict sd;
  for (const auto& [k, v] : d) sd.set(k.cast<std::string>(), v.cast<Tensor>());
  return sd;
}

}  // namespace globe::py

PYBIND11_MODULE(_globe, m) {
  using namespace globe::py;
  m.doc() = "Globe's C++ core (use the globe package, not this module)";
  // globe::Error arrives as globe.Error (a RuntimeError) with the same message.
  static pyb::exception<globe::Error> error(m, "Error", PyExc_RuntimeError);
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const globe::Error& e) {
      error(e.what());
    }
  });
  bind_tensor(m);
  bind_ops(m);
  bind_nn(m);
  bind_optim(m);
  bind_io(m);
  bind_pipeline(m);
  bind_trace(m);
}
