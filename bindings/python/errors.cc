// coll.Error: the Python face of coll::Error. A subclass of RuntimeError whose `code`
// attribute names the ErrorCode ("Timeout", "PeerLost", "Mismatch", "InvalidArgument",
// "Unsupported", "Transport", "Internal"); str(e) is the C++ message, which names the op, its
// sequence number and the peers.
#include "bindings.h"

namespace coll::python {

namespace {
// Created once by bindErrors, alive as long as the module (the interpreter keeps it).
PyObject* g_error_type = nullptr;
}  // namespace

py::object makeError(const Error& error) {
  py::object instance = py::reinterpret_borrow<py::object>(g_error_type)(error.what());
  instance.attr("code") = toString(error.code());
  return instance;
}

void bindErrors(py::module_& m) {
  // Leaked on purpose: the type must outlive every translation, including at interpreter exit.
  auto* type = new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  type->attr("code") = py::none();
  type->doc() =
      "A failed coll call or op. ``code`` names the coll::ErrorCode: 'Timeout', 'PeerLost',\n"
      "'Mismatch', 'InvalidArgument', 'Unsupported', 'Transport' or 'Internal'.";
  g_error_type = type->ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object instance = makeError(e);
      PyErr_SetObject(g_error_type, instance.ptr());
    }
  });
}

}  // namespace coll::python
