// Session: the executor over NumPy arrays. Inputs that are C-contiguous, aligned and of an
// ONNX element type are read in place; outputs the session hands over are returned without a
// copy. The GIL is released while the graph runs; runs of one session are serialized.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"

namespace inferopt::python {
namespace {

class py_session {
 public:
  py_session(const ir::model& m, int threads, bool memory_plan, bool winograd) {
    py::gil_scoped_release release;
    session_ = std::make_unique<runtime::session>(m, runtime::session_options{.threads = threads,
                                                                              .memory_plan = memory_plan,
                                                                              .hand_over_outputs = true,
                                                                              .winograd = winograd});
  }

  py::dict run(const py::object& feeds, const std::optional<std::vector<std::string>>& names) {
    std::vector<py::array> keep;
    runtime::tensor_map inputs = feeds_of(feeds, keep);
    runtime::tensor_map outputs;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex_);
      outputs = session_->run(inputs);
      inputs.clear();  // drop the views of the arrays while `keep` still holds them
    }
    if (!names) return dict_of(std::move(outputs));
    runtime::tensor_map chosen;
    for (const std::string& n : *names) {
      auto it = outputs.find(n);
      if (it == outputs.end()) throw error(errc::invalid_argument, "run: the model has no output '" + n + "'");
      chosen.insert(outputs.extract(it));
    }
    return dict_of(std::move(chosen));
  }

  /// Mean milliseconds of `iterations` runs timed in C++, without Python in the loop: the
  /// baseline Session.run's own cost is measured against.
  double benchmark(const py::object& feeds, int iterations) {
    if (iterations < 1) throw error(errc::invalid_argument, "benchmark: iterations must be at least 1");
    std::vector<py::array> keep;
    const runtime::tensor_map inputs = feeds_of(feeds, keep);
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) (void)session_->run(inputs);
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() / iterations;
  }

  [[nodiscard]] py::list describe(const std::vector<runtime::io_info>& infos) const {
    py::list out;
    for (const runtime::io_info& i : infos) {
      py::list shape;
      for (const ir::dim& d : i.shape) {
        if (d.is_static()) {
          shape.append(d.value());
        } else if (d.is_symbolic()) {
          shape.append(d.param());
        } else {
          shape.append(py::none());
        }
      }
      py::object dtype = py::none();
      try {
        dtype = dtype_of(i.type);
      } catch (const error&) {
        // no NumPy dtype (bfloat16, strings): None
      }
      out.append(py::dict(py::arg("name") = i.name, py::arg("dtype") = dtype,
                          py::arg("shape") = i.has_shape ? py::object(shape) : py::object(py::none()),
                          py::arg("optional") = i.optional));
    }
    return out;
  }

  runtime::session& session() { return *session_; }

 private:
  std::unique_ptr<runtime::session> session_;
  std::mutex mutex_;
};

}  // namespace

void bind_session(py::module_& m) {
  py::class_<py_session>(m, "Session", "The CPU executor on one model; run() takes and returns NumPy arrays.")
      .def(py::init<const ir::model&, int, bool, bool>(), py::arg("model"), py::arg("threads") = 0,
           py::arg("memory_plan") = true, py::arg("winograd") = true,
           "Builds every kernel. threads=0: every CPU this process may use. winograd=False: 3x3 convolutions "
           "on the direct kernel only (smaller weights, slower).")
      .def("run", &py_session::run, py::arg("feeds"), py::arg("outputs") = py::none(),
           "Runs the model on {input name: array}; returns {output name: array} (only `outputs`, when given).")
      .def("benchmark", &py_session::benchmark, py::arg("feeds"), py::arg("iterations") = 100,
           "Mean milliseconds per run over `iterations` runs timed in C++ (no Python in the loop).")
      .def_property_readonly("inputs", [](py_session& s) { return s.describe(s.session().inputs()); },
                             "[{'name', 'dtype', 'shape', 'optional'}]; symbolic dims are strings.")
      .def_property_readonly("outputs", [](py_session& s) { return s.describe(s.session().outputs()); })
      .def_property_readonly("threads", [](py_session& s) { return s.session().threads(); })
      .def("memory_plan", [](py_session& s) {
        const runtime::memory_plan_info p = s.session().memory_plan();
        return py::dict(py::arg("active") = p.active, py::arg("arena_bytes") = p.arena_bytes,
                        py::arg("lower_bound_bytes") = p.lower_bound_bytes, py::arg("naive_bytes") = p.naive_bytes,
                        py::arg("planned_tensors") = p.planned_tensors);
      }, "The last run's memory plan.")
      .def("weight_memory", [](py_session& s) {
        const runtime::weight_memory_info w = s.session().weight_memory();
        return py::dict(py::arg("initializer_bytes") = w.initializer_bytes, py::arg("kernel_bytes") = w.kernel_bytes);
      }, "Bytes of weights the session holds: initializers, and the kernels' own layouts.");
}

}  // namespace inferopt::python
