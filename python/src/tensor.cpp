// Tensor, its dtypes and layouts, and numpy.
#include <sstream>

#include "bind.h"

namespace globe::py {

namespace {

DType dtype_of_numpy(const pyb::dtype& dt) {
  if (dt.byteorder() != '>') {  // native (or not applicable)
    if (dt.kind() == 'f' && dt.itemsize() == 4) return kFloat32;
    if (dt.kind() == 'f' && dt.itemsize() == 8) return kFloat64;
    if (dt.kind() == 'f' && dt.itemsize() == 2) return kFloat16;
    if (dt.kind() == 'i' && dt.itemsize() == 8) return kInt64;
    if (dt.kind() == 'b' && dt.itemsize() == 1) return kBool;
  }
  throw Error("[tensor] numpy dtype " + std::string(pyb::str(static_cast<pyb::handle>(dt))) +
              " is not supported: use float32, float64, float16, int64 or bool");
}

pyb::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::float32: return pyb::dtype::of<float>();
    case DType::float64: return pyb::dtype::of<double>();
    case DType::int64: return pyb::dtype::of<int64_t>();
    case DType::float16: return pyb::dtype("float16");
    case DType::boolean: return pyb::dtype::of<bool>();
    case DType::int32: return pyb::dtype::of<int32_t>();
    case DType::int8: return pyb::dtype::of<int8_t>();
    case DType::uint8: return pyb::dtype::of<uint8_t>();
    case DType::bfloat16: break;
  }
  throw pyb::type_error("[numpy] " + std::string(dtype_name(t)) + " has no numpy dtype: convert with .float() first");
}

// A local tensor's values as a numpy array that shares its storage (any strides), kept alive by
// the array: no copy.
// A local tensor's values as a numpy array: sharing a host tensor's memory (torch's .numpy()), a
// host copy of a device tensor's (OneFlow's .numpy() of a GPU tensor).
pyb::array local_array(const Tensor& device_t) {
  const Tensor t = device_t.host_view();
  const size_t item = itemsize(t.dtype());
  std::vector<pyb::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides()) strides.push_back(pyb::ssize_t(s * int64_t(item)));
  auto* keep = new Tensor(t);
  pyb::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return pyb::array(numpy_dtype(t.dtype()), shape, strides, t.raw_data(), owner);
}

// A numpy array as a local tensor. A writeable C-contiguous float32, float64, int64 or bool array is
// shared, not copied (torch.from_numpy): the tensor keeps the array alive, and writes through
// either are seen by the other. Anything else (other dtypes numpy can cast to ours, strided or
// read-only arrays) is copied once into a new array first.
Tensor from_numpy(const pyb::array& a_in) {
  pyb::array a = a_in;
  const pyb::dtype dt = a.dtype();
  if (dt.kind() == 'f' && dt.itemsize() != 2 && dt.itemsize() != 4 && dt.itemsize() != 8) a = a_in.attr("astype")("float32");
  if (dt.kind() == 'i' || dt.kind() == 'u') a = a_in.attr("astype")("int64");  // bool ('b') stays bool
  if (a.dtype().byteorder() == '>') a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  const DType t = dtype_of_numpy(a.dtype());
  const bool shareable = (a.flags() & pyb::array::c_style) && a.writeable() && a.attr("flags").attr("aligned").cast<bool>();
  if (!shareable) a = a.attr("copy")("C");
  Shape shape(a.shape(), a.shape() + a.ndim());
  // The owner holds a reference to the array; dropping it needs the GIL.
  auto* held = new pyb::object(a);
  std::shared_ptr<void> owner(held, [](void* p) {
    pyb::gil_scoped_acquire gil;
    delete static_cast<pyb::object*>(p);
  });
  return Tensor::from_external(a.mutable_data(), shape, t, std::move(owner));
}

// ==, != and hash for a layout value: another type compares unequal (a bool, never a TypeError, as
// OneFlow's `x.sbp != flow.sbp.broadcast`); the hash follows the printed form.
template <class T>
pyb::class_<T> with_equality(pyb::class_<T> cls) {
  auto same = [](const T& a, const pyb::object& b) { return pyb::isinstance<T>(b) && a == b.cast<T>(); };
  return cls.def("__eq__", same)
      .def("__ne__", [same](const T& a, const pyb::object& b) { return !same(a, b); })
      .def("__hash__", [](const T& v) { return std::hash<std::string>()(v.to_string()); });
}

}  // namespace

void bind_tensor(pyb::module_& m) {
  pyb::enum_<DType>(m, "dtype")
      .value("float32", DType::float32)
      .value("float64", DType::float64)
      .value("int64", DType::int64)
      .value("bfloat16", DType::bfloat16)
      .value("float16", DType::float16)
      .value("bool", DType::boolean)
      .value("int32", DType::int32)
      .value("int8", DType::int8)
      .value("uint8", DType::uint8);

  with_equality(pyb::class_<Sbp>(m, "Sbp"))
      .def("__repr__", [](const Sbp& s) { return "sbp." + std::string(s.is_split() ? "split(" + std::to_string(s.dim) + ")"
                                                                                    : s.is_broadcast() ? "broadcast" : "partial_sum"); })
      .def("__str__", &Sbp::to_string)
      .def_property_readonly("dim", [](const Sbp& s) -> pyb::object {
        return s.is_split() ? pyb::object(pyb::int_(s.dim)) : pyb::object(pyb::none());
      });
  m.def("split", &sbp::split, pyb::arg("dim"));
  m.attr("broadcast") = sbp::broadcast;
  m.attr("partial_sum") = sbp::partial_sum;

  with_equality(pyb::class_<NdSbp>(m, "NdSbp"))
      .def(pyb::init([](const pyb::object& o) { return to_nd_sbp(o); }))
      .def("__len__", &NdSbp::size)
      .def("__getitem__", [](const NdSbp& s, size_t i) {
        if (i >= s.size()) throw pyb::index_error();
        return s[i];
      })
      .def("__repr__", &NdSbp::to_string);

  with_equality(pyb::class_<Placement>(m, "Placement"))
      .def(pyb::init([](const std::string& device, const std::vector<int>& ranks, const std::vector<int64_t>& mesh) {
             return Placement(device, ranks, mesh);
           }),
           pyb::arg("device"), pyb::arg("ranks"), pyb::arg("mesh_shape"))
      .def_static("all", &Placement::all, pyb::arg("device") = "cpu")
      .def_property_readonly("type", &Placement::device)
      .def_property_readonly("rank_list", &Placement::ranks)
      .def_property_readonly("mesh_shape", &Placement::mesh_shape)
      .def("__repr__", &Placement::to_string);

  pyb::class_<Tensor>(m, "Tensor")
      // flow.Tensor(data) and flow.Tensor(*shape): the package's constructor (globe/__init__.py).
      .def(pyb::init([](const pyb::args& args, const pyb::kwargs& kwargs) {
        return pyb::module_::import("globe").attr("_tensor_from_args")(*args, **kwargs).cast<Tensor>();
      }))
      .def_property_readonly("shape", [](const Tensor& t) { return pyb::tuple(pyb::cast(t.shape())); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("size", [](const Tensor& t, pyb::object d) -> pyb::object {
        if (d.is_none()) return pyb::tuple(pyb::cast(t.shape()));
        return pyb::int_(t.size(d.cast<int64_t>()));
      }, pyb::arg("dim") = pyb::none())
      .def_property_readonly("is_global", &Tensor::is_global)
      .def_property_readonly("_device", [](const Tensor& t) { return t.device().str(); })
      .def_property_readonly("placement", &Tensor::placement)
      .def_property_readonly("sbp", [](const Tensor& t) {
        pyb::tuple out(t.sbp().size());
        for (size_t i = 0; i < t.sbp().size(); ++i) out[i] = t.sbp()[i];
        return out;
      })
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool on) { t.set_requires_grad(on); })
      .def("requires_grad_", [](Tensor& t, bool on) { t.set_requires_grad(on); return t; }, pyb::arg("requires_grad") = true)
      .def_property("grad", [](const Tensor& t) -> pyb::object {
        Tensor g = t.grad();
        return g.defined() ? pyb::cast(g) : pyb::none();
      }, [](const Tensor& t, const pyb::object& g) { t.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def("backward", &Tensor::backward)
      .def("detach", &Tensor::detach)
      .def("item", [](const Tensor& t) -> pyb::object {
        if (t.dtype() == kInt64) return pyb::int_(t.item<int64_t>());
        if (t.dtype() == kBool) return pyb::bool_(t.item<int64_t>() != 0);
        if (!is_floating(t.dtype())) return pyb::int_(t.item<int64_t>());  // int32, int8, uint8
        return pyb::float_(t.item<double>());
      })
      .def("to_local", &Tensor::to_local)
      .def("to_global", [](const Tensor& t, const pyb::object& placement, const pyb::object& sbp,
                           const pyb::object& grad_sbp) {
        if (!grad_sbp.is_none()) {
          const Placement p = placement.is_none() ? t.placement() : to_placement(placement);
          return t.to_global(p, sbp.is_none() ? t.sbp() : to_nd_sbp(sbp), to_nd_sbp(grad_sbp));
        }
        if (placement.is_none() && sbp.is_none()) throw Error("[to_global] give placement=, sbp= or both");
        if (placement.is_none()) return t.to_global(to_nd_sbp(sbp));
        if (sbp.is_none()) return t.to_global(to_placement(placement));
        return t.to_global(to_placement(placement), to_nd_sbp(sbp));
      }, pyb::arg("placement") = pyb::none(), pyb::arg("sbp") = pyb::none(), pyb::arg("grad_sbp") = pyb::none())
      .def("numpy", [](const Tensor& t) {
        // A global tensor gives its whole value (collective: every rank calls it), as OneFlow's.
        if (!t.is_global()) return local_array(t);
        Tensor whole = t.to_global(Placement::all(t.placement().device()), replicated(1)).to_local();
        return local_array(whole);
      })
      .def("same", &Tensor::same, "whether both handles are the same tensor")
      // What `same` compares, as a number: the key of the package's one-object-per-parameter map.
      .def_property_readonly("_impl_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl_ptr().get()); })
      .def("__repr__", [](const Tensor& t) {
        std::ostringstream os;
        os << t;
        return os.str();
      })
      .def("__len__", [](const Tensor& t) { return t.dim() ? t.shape()[0] : 0; });

  m.def("from_numpy", &from_numpy, pyb::arg("array"));
  m.def("describe", &describe);
  m.def("visualize", [](const Tensor& t) { return visualize(t); }, pyb::arg("tensor"));
  // A layout not yet made: visualize((4, 6), placement, sbp).
  m.def("visualize", [](const pyb::object& shape, const pyb::object& placement, const pyb::object& sbp) {
    return visualize(to_shape(shape), to_placement(placement), to_nd_sbp(sbp));
  }, pyb::arg("shape"), pyb::arg("placement"), pyb::arg("sbp"));
  m.def(
      "local_block",
      [](const Shape& shape, const Placement& p, const pyb::object& sbp, int rank) {
        const Block b = local_block(shape, p, to_nd_sbp(sbp), rank < 0 ? dist::world_rank() : rank);
        return pyb::make_tuple(b.start, b.shape);
      },
      pyb::arg("shape"), pyb::arg("placement"), pyb::arg("sbp"), pyb::arg("rank") = -1,
      "(start, shape) of the block of a `shape` tensor that `rank` (default: this one) holds");
  m.def("boxing_paths", &boxing_paths, "the boxing this rank ran since the last reset: (path, calls)");
  m.def("reset_boxing_paths", &reset_boxing_paths);
}

}  // namespace globe::py
