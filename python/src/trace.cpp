// Tracing from Python (python/globe/trace.py gives it the CommDebugMode-like spelling).
#include <memory>

#include "bind.h"

namespace globe::py {

namespace {

trace::Kind kind_of(const std::string& name) {
  for (trace::Kind k : {trace::Kind::module, trace::Kind::op, trace::Kind::layout, trace::Kind::pipeline,
                        trace::Kind::comm, trace::Kind::wait, trace::Kind::io, trace::Kind::region})
    if (name == trace::kind_name(k)) return k;
  throw pyb::value_error("trace span kind '" + name + "': expected module, op, layout, pipeline, comm, wait, io or region");
}

// A span as a Python context manager.
struct PySpan {
  trace::Kind kind;
  std::string name;
  std::unique_ptr<trace::Span> span;
};

}  // namespace

void bind_trace(pyb::module_& m) {
  pyb::class_<CommTrace>(m, "CommTrace")
      .def(pyb::init<>())
      .def("stop", &CommTrace::stop)
      .def("table", &CommTrace::table, pyb::arg("with_time") = true)
      .def("counts", &CommTrace::counts)
      .def("records", [](const CommTrace& t) {
        pyb::list out;
        for (const CommRecord& r : t.records()) {
          pyb::dict d;
          d["collective"] = r.collective;
          d["module"] = r.module;
          d["op"] = r.op;
          d["layout"] = r.layout;
          d["backward"] = r.backward;
          d["in_flight"] = r.in_flight;
          d["bytes"] = r.bytes;
          d["seconds"] = r.seconds;
          d["group"] = r.group;
          d["peer"] = r.peer;
          out.append(d);
        }
        return out;
      });
  pyb::class_<trace::Timeline>(m, "Timeline")
      .def(pyb::init<const std::string&>(), pyb::arg("path"))
      .def("close", &trace::Timeline::close)
      .def_property_readonly("path", &trace::Timeline::path);
  m.def("tracing", &trace::on, "whether any trace sink listens");
  pyb::class_<PySpan>(m, "TraceSpan")
      .def(pyb::init([](const std::string& kind, const std::string& name) { return PySpan{kind_of(kind), name, nullptr}; }),
           pyb::arg("kind"), pyb::arg("name"))
      .def("__enter__", [](PySpan& s) { s.span = std::make_unique<trace::Span>(s.kind, s.name); })
      .def("__exit__", [](PySpan& s, const pyb::args&) { s.span.reset(); });
}

}  // namespace globe::py
