#pragma once
// The parts of the `inferopt._core` extension module, each registered by its own file.

#include <pybind11/pybind11.h>

namespace inferopt::python {

namespace py = pybind11;

/// InferoptError and its subclasses, one per error code, and the translator to them.
void bind_errors(py::module_& m);
/// Model: load, parse, serialize, save, clone; inspect and plan.
void bind_model(py::module_& m);
/// optimize and fp16: pass pipelines with their reports.
void bind_optimize(py::module_& m);
/// sparsify, and the per-layer block-sparsity sensitivity.
void bind_sparsify(py::module_& m);
/// calibrate, calibration states, quantize.
void bind_quantize(py::module_& m);
/// prune, its prunable groups and sensitivity sweep.
void bind_prune(py::module_& m);
/// Session: the executor over NumPy arrays.
void bind_session(py::module_& m);

}  // namespace inferopt::python
