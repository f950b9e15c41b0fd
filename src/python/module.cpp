// The `inferopt._core` extension module: the library for Python. The `inferopt` package
// (python/inferopt) wraps it with path, bytes and onnx.ModelProto arguments.

#include "bindings.hpp"

#ifndef INFEROPT_VERSION
#define INFEROPT_VERSION "unknown"
#endif

PYBIND11_MODULE(_core, m) {
  m.doc() = "inferopt's library: optimize, quantize, prune and sparsify ONNX models, and run them";
  m.attr("__version__") = INFEROPT_VERSION;
  inferopt::python::bind_errors(m);
  inferopt::python::bind_model(m);
  inferopt::python::bind_optimize(m);
  inferopt::python::bind_sparsify(m);
  inferopt::python::bind_quantize(m);
  inferopt::python::bind_prune(m);
  inferopt::python::bind_session(m);
}
