// The Python front end's bindings (pybind11): one file per part of the library, each adding to
// the extension module `globe._globe`. The Python package (python/globe/) gives them the tutorial's
// OneFlow / PyTorch spelling; see python/README.md.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "globe/globe.h"

namespace globe::py {

namespace pyb = pybind11;

void bind_tensor(pyb::module_& m);  // DType, Sbp, NdSbp, Placement, Tensor, numpy
void bind_ops(pyb::module_& m);     // creation and every public op
void bind_nn(pyb::module_& m);      // the C++ layers, as objects the Python Module wraps
void bind_optim(pyb::module_& m);   // SGD, Adam, AdamW, clipping
void bind_io(pyb::module_& m);      // save / load, sharded checkpoints, dist
void bind_pipeline(pyb::module_& m);  // Pipeline over Python modules
void bind_trace(pyb::module_& m);     // CommTrace, timelines, spans around Python module calls

// A Python sequence of ints as a Shape.
Shape to_shape(const pyb::object& seq);
// A placement= argument; anything else is a TypeError naming the argument.
Placement to_placement(const pyb::object& placement);
// Python sbp argument (an Sbp, an NdSbp, or a list/tuple of Sbp) as an NdSbp.
NdSbp to_nd_sbp(const pyb::object& sbp);
// A state dict as a Python dict (insertion order) and back.
pyb::dict to_dict(const StateDict& sd);
StateDict to_state_dict(const pyb::dict& d);

}  // namespace globe::py
