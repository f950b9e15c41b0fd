// Model, and the read-only jobs on one: inspect (statistics, interface, versions) and plan
// (the static arena of the intermediates).

#include <filesystem>
#include <map>
#include <optional>
#include <memory>
#include <string>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"
#include "tooling/checked_model.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::python {
namespace {

using model_ptr = std::shared_ptr<ir::model>;

std::size_t node_count(const ir::model& m) {
  std::size_t n = 0;
  for (const ir::node* node : m.graph().nodes()) n += node != nullptr;
  return n;
}

std::string dims_text(const ir::value& v) { return v.type() ? ir::to_string(v.type()->dims) : "?"; }

py::list interface_of(std::span<ir::value* const> values) {
  py::list out;
  for (const ir::value* v : values) {
    if (v->is_initializer()) continue;
    out.append(py::dict(py::arg("name") = v->name(), py::arg("type") = std::string(ir::to_string(v->elem_type())),
                        py::arg("shape") = dims_text(*v)));
  }
  return out;
}

/// Serialized bytes as the CLI writes a model: value_info inferred afresh first.
py::bytes bytes_of(const ir::model& m) {
  std::string bytes;
  {
    py::gil_scoped_release release;
    ir::model copy = m.clone();
    tooling::prepare_for_writing(copy);
    bytes = ir::serialize_model(copy);
  }
  return py::bytes(bytes);
}

void save(const ir::model& m, const std::filesystem::path& path, std::optional<std::size_t> external_data_threshold) {
  py::gil_scoped_release release;
  ir::model copy = m.clone();
  tooling::prepare_for_writing(copy);
  ir::save_options options;
  options.external_data_threshold = external_data_threshold;
  ir::save_model(copy, path, options);
}

py::object inspect(const ir::model& m) {
  nlohmann::json j;
  {
    py::gil_scoped_release release;
    ir::shape_inference_report shapes;
    const ir::model_statistics stats = tooling::statistics_of(m, &shapes);
    j = tooling::inspect_json(m, stats, shapes);
  }
  return python_of(j);
}

py::object plan(const ir::model& m, const std::map<std::string, std::int64_t>& dims, bool include_io, bool in_place,
                std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw error(errc::invalid_argument, "alignment must be a power of two, got " + std::to_string(alignment));
  }
  nlohmann::json j;
  {
    py::gil_scoped_release release;
    ir::model copy = m.clone();
    ir::shape_inference_options shape_options;
    for (const auto& [name, value] : dims) shape_options.dim_values.emplace(name, value);
    const ir::shape_inference_report shapes = ir::infer_shapes(copy, shape_options);
    const runtime::graph_memory_options options{
        .alignment = alignment, .include_graph_inputs = include_io, .include_graph_outputs = include_io, .in_place = in_place};
    const runtime::graph_memory_plan p = runtime::plan_graph_memory(copy.graph(), options);
    if (const auto problems = runtime::check_graph_memory_plan(p); !problems.empty()) {
      throw error(errc::internal, "the arena plan fails its overlap check: " + problems.front());
    }
    j = tooling::plan_json(p, options, shapes);
  }
  return python_of(j);
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<ir::model, model_ptr>(m, "Model", "An ONNX model in inferopt's IR. Functions that change a model return a new one.")
      .def_static(
          "load",
          [](const std::filesystem::path& path) {
            py::gil_scoped_release release;
            return std::make_shared<ir::model>(tooling::load_checked(path));
          },
          py::arg("path"), "Loads and validates an ONNX file (external data beside it is read too).")
      .def_static(
          "from_bytes",
          [](const py::bytes& data) {
            const std::string_view bytes = data;
            py::gil_scoped_release release;
            return std::make_shared<ir::model>(tooling::parse_checked(bytes, "model bytes"));
          },
          py::arg("data"), "Parses and validates a serialized ModelProto (onnx.ModelProto.SerializeToString()).")
      .def("to_bytes", &bytes_of, "The serialized ModelProto, value_info inferred afresh, every tensor inline.")
      .def("save", &save, py::arg("path"), py::arg("external_data_threshold") = py::none(),
           "Writes the model atomically (a temporary file renamed into place); tensors of at least "
           "`external_data_threshold` bytes go to `<path>.data`.")
      .def("clone", [](const ir::model& self) { return std::make_shared<ir::model>(self.clone()); }, "A deep copy.")
      .def_property_readonly("ir_version", [](const ir::model& self) { return self.ir_version; })
      .def_property_readonly("opset", [](const ir::model& self) { return self.opset("").value_or(0); },
                             "The default domain's opset version (0 when not imported).")
      .def_property_readonly("node_count", [](const ir::model& self) { return node_count(self); })
      .def_property_readonly("inputs", [](const ir::model& self) { return interface_of(self.graph().inputs()); },
                             "[{'name', 'type', 'shape'}] of the graph inputs that are not weights.")
      .def_property_readonly("outputs", [](const ir::model& self) { return interface_of(self.graph().outputs()); })
      .def("__repr__", [](const ir::model& self) {
        return "<inferopt.Model opset " + std::to_string(self.opset("").value_or(0)) + ", " +
               std::to_string(node_count(self)) + " nodes>";
      });

  m.def("inspect", &inspect, py::arg("model"),
        "Versions, interface, op histogram, params and MACs (symbolic input dims counted as 1): "
        "the dict `inferopt inspect --json` prints.");
  m.def("plan", &plan, py::arg("model"), py::arg("dims") = std::map<std::string, std::int64_t>{},
        py::arg("include_io") = false, py::arg("in_place") = true, py::arg("alignment") = 64,
        "One static arena for the intermediate tensors: the dict `inferopt plan --json` prints. "
        "`dims` gives symbolic dims numbers, e.g. {'batch': 8}.");
}

}  // namespace inferopt::python
