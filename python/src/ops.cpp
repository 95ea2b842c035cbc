// Creation functions (local, or global with placement= and sbp=) and every public op, plus the
// Tensor operators.
#include "bind.h"

namespace globe::py {

namespace {
// ~, & and | are logical on bool tensors; on integers torch's are bitwise, which Globe does not
// have, so they are refused rather than answered logically.
const Tensor& bool_operand(const Tensor& t, const char* op) {
  if (t.dtype() != kBool)
    throw pyb::type_error(std::string(op) + " takes bool tensors (masks), got " + describe(t) +
                          ": Globe has no bitwise operators; compare to make a mask first (t != 0)");
  return t;
}
}  // namespace

namespace {

// A creation call: local without placement, global with it (sbp defaults to broadcast); sbp=
// without placement= is an error naming `op`.
template <class Local, class Global>
Tensor local_or_global(const char* op, const pyb::object& placement, const pyb::object& sbp, Local local,
                       Global global) {
  if (placement.is_none()) {
    if (!sbp.is_none()) throw Error(std::string("[") + op + "] sbp= needs placement= too");
    return local();
  }
  return global(to_placement(placement), sbp.is_none() ? NdSbp(sbp::broadcast) : to_nd_sbp(sbp));
}

using Creator = Tensor (*)(const Shape&, DType);
using GlobalCreator = Tensor (*)(const Shape&, const Placement&, const NdSbp&, DType);

void creation(pyb::module_& m, const char* name, Creator local, GlobalCreator global) {
  m.def(name, [local, global](const pyb::object& shape, DType dtype, const pyb::object& placement,
                              const pyb::object& sbp) {
    const Shape s = to_shape(shape);
    return local_or_global("creation", placement, sbp, [&] { return local(s, dtype); },
                           [&](const Placement& p, const NdSbp& b) { return global(s, p, b, dtype); });
  }, pyb::arg("shape"), pyb::arg("dtype") = kFloat32, pyb::arg("placement") = pyb::none(), pyb::arg("sbp") = pyb::none());
}


}  // namespace

void bind_ops(pyb::module_& m) {
  creation(m, "zeros", [](const Shape& s, DType d) { return zeros(s, d); },
           [](const Shape& s, const Placement& p, const NdSbp& b, DType d) { return zeros(s, p, b, d); });
  creation(m, "ones", [](const Shape& s, DType d) { return ones(s, d); },
           [](const Shape& s, const Placement& p, const NdSbp& b, DType d) { return ones(s, p, b, d); });
  creation(m, "randn", [](const Shape& s, DType d) { return randn(s, d); },
           [](const Shape& s, const Placement& p, const NdSbp& b, DType d) { return randn(s, p, b, d); });
  m.def("full", [](const pyb::object& shape, double v, DType dtype, const pyb::object& placement, const pyb::object& sbp) {
    const Shape s = to_shape(shape);
    return local_or_global("full", placement, sbp, [&] { return full(s, v, dtype); },
                           [&](const Placement& p, const NdSbp& b) { return full(s, v, p, b, dtype); });
  }, pyb::arg("shape"), pyb::arg("value"), pyb::arg("dtype") = kFloat32, pyb::arg("placement") = pyb::none(),
        pyb::arg("sbp") = pyb::none());
  m.def("arange", [](int64_t n, DType dtype) { return arange(n, dtype); }, pyb::arg("n"), pyb::arg("dtype") = kInt64);
  m.def("manual_seed", &manual_seed, pyb::arg("seed"));
  m.def("from_full", [](const Tensor& v, const Placement& p, const pyb::object& sbp) { return from_full(v, p, to_nd_sbp(sbp)); },
        pyb::arg("value"), pyb::arg("placement"), pyb::arg("sbp"));
  m.def("copy_", &copy_, pyb::arg("dst"), pyb::arg("src"));
  m.def("grad_enabled", &grad_enabled);
  m.def("set_grad_enabled", &set_grad_enabled);
  m.def("deterministic", &deterministic);
  m.def("set_deterministic", &set_deterministic, pyb::arg("on"));
  m.def("set_float32_matmul_precision", [](const std::string& p) { set_float32_matmul_precision(p); },
        pyb::arg("precision"));
  m.def("get_float32_matmul_precision", &float32_matmul_precision);
  m.def("check_microbatches", &check_microbatches, pyb::arg("op"), pyb::arg("rows"), pyb::arg("count"));
  // Activation recomputation (globe.utils.checkpoint): `fn` takes the list of inputs and returns
  // one tensor; it is called again in the backward. The node keeps the Python function alive, and
  // lets it go only while the interpreter still runs (a node may outlive it at exit).
  m.def("checkpoint", [](const pyb::function& fn, const std::vector<Tensor>& inputs, const std::string& name) {
    std::shared_ptr<PyObject> held(fn.inc_ref().ptr(), [](PyObject* o) {
      if (Py_IsInitialized()) {
        pyb::gil_scoped_acquire gil;
        Py_DECREF(o);
      }
    });
    RegionFn region = [held](const std::vector<Tensor>& in) {
      pyb::object out = pyb::reinterpret_borrow<pyb::function>(held.get())(in);
      if (!pyb::isinstance<Tensor>(out))
        throw pyb::type_error("checkpoint: the function must return one Tensor, not " +
                              std::string(pyb::str(pyb::type::of(out).attr("__name__"))));
      return out.cast<Tensor>();
    };
    return checkpoint(region, inputs, name);
  }, pyb::arg("fn"), pyb::arg("inputs"), pyb::arg("name") = "checkpoint");

  // Elementwise (tensor or number on either side) and unary.
  m.def("add", [](const Tensor& a, const Tensor& b) { return add(a, b); });
  m.def("sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); });
  m.def("mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); });
  m.def("div", [](const Tensor& a, const Tensor& b) { return div(a, b); });
  m.def("swiglu", &swiglu, pyb::arg("gate"), pyb::arg("up"));
  m.def("rotary_embedding", &rotary_embedding, pyb::arg("input"), pyb::arg("cos"), pyb::arg("sin"));
  m.def("pow", [](const Tensor& a, double e) { return pow(a, e); });
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&)>>{
           {"neg", &neg}, {"exp", &exp}, {"log", &log}, {"sqrt", &sqrt}, {"relu", &relu}, {"gelu", &gelu},
           {"gelu_tanh", &gelu_tanh}, {"tanh", &tanh}, {"sigmoid", &sigmoid}, {"silu", &silu}, {"contiguous", &contiguous}})
    m.def(name, fn);
  m.def("matmul", &matmul);
  m.def("matmul_nt", &matmul_nt, pyb::arg("a"), pyb::arg("b"), pyb::arg("bias") = Tensor());
  m.def("to_dtype", &to_dtype, pyb::arg("input"), pyb::arg("dtype"));
  // Devices: names as C++ parses them ("cpu", "cuda", "cuda:N"), the CUDA build and its GPUs.
  m.def("to_device", [](const Tensor& t, const std::string& d) { return to(t, Device::parse(d)); },
        pyb::arg("input"), pyb::arg("device"));
  m.def("parse_device", [](const std::string& d) {
    const Device dev = Device::parse(d);
    return pyb::make_tuple(device_type_name(dev.type), dev.index);
  });
  m.def("cuda_built", [] { return device_built("cuda"); });
  m.def("cuda_device_count", [] { return device_count("cuda"); });
  // Memory per device (device/memory.h), for flow.cuda's memory_allocated and its family: each
  // checks the device first, `what` naming the caller in the error for one this process cannot use.
  static constexpr auto usable = [](const std::string& d, const std::string& what) {
    const Device dev = Device::parse(d);
    check_device_usable(dev, "[" + what + "]");
    return dev;
  };
  m.def("memory_stats", [](const std::string& d, const std::string& what) {
    const MemoryStats s = memory_stats(usable(d, what));
    return pyb::make_tuple(s.current_bytes, s.peak_bytes, s.reserved_bytes);
  });
  m.def("reset_peak_memory", [](const std::string& d, const std::string& what) { reset_peak_memory(usable(d, what)); });
  m.def("empty_cache", [](const std::string& d, const std::string& what) { empty_cache(usable(d, what)); });
  m.def("synchronize", [](const std::string& d, const std::string& what) { synchronize(usable(d, what)); });
  m.def("zeros_like", &zeros_like);
  m.def("ones_like", &ones_like);
  creation(m, "rand", [](const Shape& s, DType d) { return rand(s, d); },
           [](const Shape& s, const Placement& p, const NdSbp& b, DType d) { return rand(s, p, b, d); });
  m.def("randint", [](int64_t low, int64_t high, const pyb::object& shape, const pyb::object& placement,
                      const pyb::object& sbp) {
    const Shape s = to_shape(shape);
    return local_or_global("randint", placement, sbp, [&] { return randint(low, high, s); },
                           [&](const Placement& p, const NdSbp& b) { return randint(low, high, s, p, b); });
  }, pyb::arg("low"), pyb::arg("high"), pyb::arg("shape"), pyb::arg("placement") = pyb::none(),
        pyb::arg("sbp") = pyb::none());
  m.def("uniform", [](const pyb::object& shape, double low, double high, DType dtype) {
    return uniform(to_shape(shape), low, high, dtype);
  }, pyb::arg("shape"), pyb::arg("low"), pyb::arg("high"), pyb::arg("dtype") = kFloat32);
  m.def("view", [](const Tensor& a, const pyb::object& s) { return view(a, to_shape(s)); });
  m.def("expand", [](const Tensor& a, const pyb::object& s) { return expand(a, to_shape(s)); });
  m.def("sum_to", [](const Tensor& a, const pyb::object& s) { return sum_to(a, to_shape(s)); });
  m.def("clamp", &clamp, pyb::arg("input"), pyb::arg("min") = pyb::none(), pyb::arg("max") = pyb::none());
  m.def("abs", &globe::abs, pyb::arg("input"));
  m.def("masked_fill", &masked_fill, pyb::arg("input"), pyb::arg("mask"), pyb::arg("value"));
  // Comparisons (a tensor or a number on the right), where (either operand a number), the logical
  // ops, and torch's whole-tensor equal / allclose.
  auto compare = [&m](const char* name, Tensor (*tt)(const Tensor&, const Tensor&), Tensor (*ts)(const Tensor&, double)) {
    m.def(name, tt, pyb::arg("input"), pyb::arg("other"));
    m.def(name, ts, pyb::arg("input"), pyb::arg("other"));
  };
  compare("eq", &eq, &eq);
  compare("ne", &ne, &ne);
  compare("lt", &lt, &lt);
  compare("le", &le, &le);
  compare("gt", &gt, &gt);
  compare("ge", &ge, &ge);
  m.def("where", pyb::overload_cast<const Tensor&, const Tensor&, const Tensor&>(&where), pyb::arg("condition"),
        pyb::arg("input"), pyb::arg("other"));
  m.def("where", pyb::overload_cast<const Tensor&, const Tensor&, double>(&where), pyb::arg("condition"),
        pyb::arg("input"), pyb::arg("other"));
  m.def("where", pyb::overload_cast<const Tensor&, double, const Tensor&>(&where), pyb::arg("condition"),
        pyb::arg("input"), pyb::arg("other"));
  m.def("logical_not", &logical_not, pyb::arg("input"));
  m.def("logical_and", &logical_and, pyb::arg("input"), pyb::arg("other"));
  m.def("logical_or", &logical_or, pyb::arg("input"), pyb::arg("other"));
  m.def("equal", &equal, pyb::arg("input"), pyb::arg("other"));
  m.def("allclose", &allclose, pyb::arg("input"), pyb::arg("other"), pyb::arg("rtol") = 1e-5,
        pyb::arg("atol") = 1e-8, pyb::arg("equal_nan") = false);
  m.def("scale_grad", &scale_grad, pyb::arg("input"), pyb::arg("factor"));
  m.def("narrow", &narrow, pyb::arg("input"), pyb::arg("dim"), pyb::arg("start"), pyb::arg("length"));
  m.def("slice", &slice, pyb::arg("input"), pyb::arg("dim"), pyb::arg("start"), pyb::arg("end"));
  m.def("gather", &gather, pyb::arg("input"), pyb::arg("dim"), pyb::arg("index"));
  m.def("scatter_add", [](const pyb::object& shape, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_add(to_shape(shape), dim, index, src);
  }, pyb::arg("shape"), pyb::arg("dim"), pyb::arg("index"), pyb::arg("src"));
  m.def("pick", &pick, pyb::arg("input"), pyb::arg("index"));
  m.def("causal_fill", &causal_fill, pyb::arg("input"), pyb::arg("value"));
  m.def("causal_softmax", &causal_softmax, pyb::arg("scores"), pyb::arg("scale") = 1.0);
  m.def("causal_attention", &causal_attention, pyb::arg("qkv"), pyb::arg("scale"));
  m.def("linear", &linear, pyb::arg("x"), pyb::arg("weight"), pyb::arg("bias") = Tensor());
  m.def("sum", [](const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) { return sum(a, dims, keepdim); },
        pyb::arg("input"), pyb::arg("dim") = std::vector<int64_t>{}, pyb::arg("keepdim") = false);
  m.def("mean", [](const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) { return mean(a, dims, keepdim); },
        pyb::arg("input"), pyb::arg("dim") = std::vector<int64_t>{}, pyb::arg("keepdim") = false);
  m.def("max", [](const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) { return max(a, dims, keepdim); },
        pyb::arg("input"), pyb::arg("dim") = std::vector<int64_t>{}, pyb::arg("keepdim") = false);
  m.def("argmax", &argmax, pyb::arg("input"), pyb::arg("dim"), pyb::arg("keepdim") = false);
  m.def("reshape", [](const Tensor& a, const pyb::object& s) { return reshape(a, to_shape(s)); });
  m.def("transpose", &transpose);
  m.def("permute", &permute);
  m.def("flatten", &flatten, pyb::arg("input"), pyb::arg("start_dim") = 0, pyb::arg("end_dim") = -1);
  m.def("unsqueeze", &unsqueeze);
  m.def("squeeze", &squeeze);
  m.def("cat", &cat, pyb::arg("tensors"), pyb::arg("dim") = 0);
  m.def("softmax", &softmax, pyb::arg("input"), pyb::arg("dim"));
  m.def("log_softmax", &log_softmax, pyb::arg("input"), pyb::arg("dim"));
  m.def("mse_loss", [](const Tensor& input, const Tensor& target, const std::string& reduction) {
    return mse_loss_with(input, target, reduction_of(reduction, "mse_loss"));
  }, pyb::arg("input"), pyb::arg("target"), pyb::arg("reduction") = "mean");
  m.def("cross_entropy", [](const Tensor& logits, const Tensor& target, const std::string& reduction) {
    return cross_entropy_with(logits, target, reduction_of(reduction, "cross_entropy"));
  }, pyb::arg("input"), pyb::arg("target"), pyb::arg("reduction") = "mean");
  m.def("embedding", &embedding);
  m.def("rms_norm", [](const Tensor& a, const pyb::object& w, double eps) { return rms_norm(a, w.is_none() ? Tensor() : w.cast<Tensor>(), eps); },
        pyb::arg("input"), pyb::arg("weight") = pyb::none(), pyb::arg("eps") = 1e-6);
  m.def("layer_norm", [](const Tensor& a, const pyb::object& shape, const pyb::object& w, const pyb::object& b,
                         double eps) {
    return layer_norm(a, to_shape(shape), w.is_none() ? Tensor() : w.cast<Tensor>(),
                      b.is_none() ? Tensor() : b.cast<Tensor>(), eps);
  }, pyb::arg("input"), pyb::arg("normalized_shape"), pyb::arg("weight") = pyb::none(), pyb::arg("bias") = pyb::none(),
        pyb::arg("eps") = 1e-5);
  m.def("dropout", &dropout, pyb::arg("input"), pyb::arg("p") = 0.5, pyb::arg("training") = true);

  // Operators on Tensor: +, -, *, / with tensors or numbers, unary -, @.
  auto cls = pyb::reinterpret_borrow<pyb::class_<Tensor>>(m.attr("Tensor"));
  cls.def("__add__", [](const Tensor& a, const Tensor& b) { return a + b; })
      .def("__add__", [](const Tensor& a, double s) { return a + s; })
      .def("__radd__", [](const Tensor& a, double s) { return s + a; })
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return a - b; })
      .def("__sub__", [](const Tensor& a, double s) { return a - s; })
      .def("__rsub__", [](const Tensor& a, double s) { return s - a; })
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return a * b; })
      .def("__mul__", [](const Tensor& a, double s) { return a * s; })
      .def("__rmul__", [](const Tensor& a, double s) { return s * a; })
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return a / b; })
      .def("__truediv__", [](const Tensor& a, double s) { return a / s; })
      .def("__rtruediv__", [](const Tensor& a, double s) { return s / a; })
      .def("__neg__", [](const Tensor& a) { return -a; })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); })
      .def("__pow__", [](const Tensor& a, double e) { return pow(a, e); })
      // Elementwise comparisons, never identity (Tensor.same is); anything else compared with a
      // tensor gets NotImplemented, so `t == None` is False as in torch.
      .def("__eq__", [](const Tensor& a, const Tensor& b) { return a == b; }, pyb::is_operator())
      .def("__eq__", [](const Tensor& a, double s) { return a == s; }, pyb::is_operator())
      .def("__ne__", [](const Tensor& a, const Tensor& b) { return a != b; }, pyb::is_operator())
      .def("__ne__", [](const Tensor& a, double s) { return a != s; }, pyb::is_operator())
      .def("__lt__", [](const Tensor& a, const Tensor& b) { return a < b; }, pyb::is_operator())
      .def("__lt__", [](const Tensor& a, double s) { return a < s; }, pyb::is_operator())
      .def("__le__", [](const Tensor& a, const Tensor& b) { return a <= b; }, pyb::is_operator())
      .def("__le__", [](const Tensor& a, double s) { return a <= s; }, pyb::is_operator())
      .def("__gt__", [](const Tensor& a, const Tensor& b) { return a > b; }, pyb::is_operator())
      .def("__gt__", [](const Tensor& a, double s) { return a > s; }, pyb::is_operator())
      .def("__ge__", [](const Tensor& a, const Tensor& b) { return a >= b; }, pyb::is_operator())
      .def("__ge__", [](const Tensor& a, double s) { return a >= s; }, pyb::is_operator())
      .def("__invert__", [](const Tensor& a) { return logical_not(bool_operand(a, "~")); })
      .def("__and__", [](const Tensor& a, const Tensor& b) {
        return logical_and(bool_operand(a, "&"), bool_operand(b, "&"));
      }, pyb::is_operator())
      .def("__or__", [](const Tensor& a, const Tensor& b) {
        return logical_or(bool_operand(a, "|"), bool_operand(b, "|"));
      }, pyb::is_operator())
      .def("sum", [](const Tensor& a) { return sum(a); })
      .def("mean", [](const Tensor& a) { return mean(a); })
      .def("reshape", [](const Tensor& a, const pyb::args& s) {
        return reshape(a, s.size() == 1 && !pyb::isinstance<pyb::int_>(s[0]) ? to_shape(s[0]) : to_shape(s));
      });
}

}  // namespace globe::py
