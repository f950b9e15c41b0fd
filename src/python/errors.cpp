// The library's errors as Python exceptions: InferoptError carries the one-line message and
// the code; each code has a subclass that also derives from the matching built-in exception,
// so `except ValueError` catches a bad argument.

#include <array>
#include <string>

#include "bindings.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::python {
namespace {

struct error_class {
  errc code;
  const char* name;
  const char* code_name;
  PyObject* builtin;  // the second base; null: InferoptError alone
};

PyObject* make_class(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("inferopt.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* base = make_class(m, "InferoptError", PyExc_RuntimeError,
                                     "An error of the inferopt library; `code` names its kind, str() is its one-line message.");
  static std::array<error_class, 7> classes{{
      {errc::invalid_argument, "InvalidArgumentError", "invalid_argument", PyExc_ValueError},
      {errc::invalid_model, "InvalidModelError", "invalid_model", PyExc_ValueError},
      {errc::unsupported, "UnsupportedError", "unsupported", nullptr},
      {errc::io, "FileError", "io", PyExc_OSError},
      {errc::verification, "VerificationError", "verification", nullptr},
      {errc::out_of_memory, "OutOfMemoryError", "out_of_memory", PyExc_MemoryError},
      {errc::internal, "InternalError", "internal", nullptr},
  }};
  static std::array<PyObject*, 7> python_classes{};
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const py::tuple bases = classes[i].builtin ? py::tuple(py::make_tuple(py::handle(base), py::handle(classes[i].builtin)))
                                               : py::tuple(py::make_tuple(py::handle(base)));
    python_classes[i] = make_class(m, classes[i].name, bases.ptr(), nullptr);
    py::handle(python_classes[i]).attr("code") = classes[i].code_name;
  }
  py::handle(base).attr("code") = "error";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const error& e) {
      for (std::size_t i = 0; i < classes.size(); ++i) {
        if (classes[i].code == e.code()) {
          PyErr_SetString(python_classes[i], e.what());
          return;
        }
      }
      PyErr_SetString(base, e.what());
    }
  });
}

}  // namespace inferopt::python
