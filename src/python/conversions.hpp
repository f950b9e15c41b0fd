#pragma once
// Between Python and the library: NumPy arrays and runtime tensors, JSON and Python objects,
// Python callbacks and the library's progress hooks.

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "inferopt/runtime/session.hpp"

namespace inferopt::python {

namespace py = pybind11;

/// The NumPy dtype of an element type. @throws error(errc::unsupported) for types NumPy
/// has no dtype for (bfloat16, string, complex).
py::dtype dtype_of(runtime::data_type type);

/// A tensor over the array's memory when it is C-contiguous, aligned and of a supported dtype
/// (no copy: the array must outlive the tensor's use); otherwise over a C-contiguous copy,
/// which `keep` holds. @throws error(errc::invalid_argument) naming `name` for dtypes the
/// executor has no type for.
runtime::tensor tensor_of(const std::string& name, const py::handle& value, std::vector<py::array>& keep);

/// An array that takes over the tensor's buffer when the tensor alone owns it; a copy
/// otherwise (views of weights, buffers the session keeps).
py::array array_of(runtime::tensor t);

/// `{name: array}` as feeds; `keep` holds every array the feeds read.
runtime::tensor_map feeds_of(const py::handle& mapping, std::vector<py::array>& keep);

/// A list of `{name: array}` mappings (calibration batches). Batches are copied where needed
/// into `keep` like feeds.
std::vector<runtime::tensor_map> batches_of(const py::handle& batches, std::vector<py::array>& keep);

/// `{name: array}` of every tensor.
py::dict dict_of(runtime::tensor_map tensors);

/// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
py::object python_of(const nlohmann::json& j);

/// A Python progress callback `fn(stage, done, total)` made callable from any thread of the
/// library: the call takes the GIL; an exception it raises is kept and later calls are
/// skipped, so that `rethrow` raises it once the library returns. Create and destroy it with
/// the GIL held, outside the region that releases it.
class progress_callback {
 public:
  progress_callback(py::object fn, std::string stage) : fn_(std::move(fn)), stage_(std::move(stage)) {}
  progress_callback(const progress_callback&) = delete;
  progress_callback& operator=(const progress_callback&) = delete;

  [[nodiscard]] bool active() const { return !fn_.is_none(); }
  void operator()(std::size_t done, std::size_t total);
  /// A std::function for the library (null when there is no callback).
  [[nodiscard]] std::function<void(std::size_t, std::size_t)> hook();
  /// Raises what the callback raised, if anything (call with the GIL held).
  void rethrow();

 private:
  py::object fn_;
  std::string stage_;
  std::mutex mutex_;
  std::exception_ptr failure_;
};

}  // namespace inferopt::python
