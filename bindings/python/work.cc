// coll.Work: the handle every op returns.
//
//   w = comm.allreduce(x)        # issued; x is being reduced in place
//   w.wait()                     # True once done (raises coll.Error if the op failed)
//   w.wait(timeout=0.5)          # False if still running after 0.5 s (it keeps running)
//   out = comm.allgather(x).get()  # wait, then the output array
//
// The Work holds references to the op's arrays until it has completed, and so does the
// communicator (so dropping the Work early is safe). Waiting releases the GIL.
#include <chrono>
#include <cmath>

#include "bindings.h"

namespace coll::python {

namespace {

bool waitFor(PyWork& w, py::object timeout) {
  bool done;
  if (timeout.is_none()) {
    py::gil_scoped_release release;
    w.work.wait();  // bounded by the op's own deadline (COLL_TIMEOUT)
    done = true;
  } else {
    const double seconds = timeout.cast<double>();
    if (!(seconds >= 0) || !std::isfinite(seconds)) throw py::value_error("timeout must be a finite number >= 0 seconds");
    const auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
    py::gil_scoped_release release;
    done = w.work.wait(ms);
  }
  if (done) w.keep_alive = py::none();  // the communicator still drops its own reference later
  return done;
}

}  // namespace

void bindWork(py::module_& m) {
  py::class_<PyWork>(m, "Work",
                     "Handle to one asynchronous op. Ops on one communicator complete in issue order, so\n"
                     "waiting on the newest Work implies every earlier one has finished.")
      .def("wait", &waitFor, py::arg("timeout") = py::none(),
           "wait(timeout=None) -> bool\n\n"
           "Blocks (without the GIL) until the op finishes; with ``timeout`` (seconds), at most that\n"
           "long, returning False if it is still running. Raises coll.Error if the op failed.")
      .def("test", [](const PyWork& w) { return w.work.test(); },
           "True once the op finished, successfully or not. Never blocks.")
      .def("error", [](const PyWork& w) -> py::object {
             auto error = w.work.error();
             return error ? makeError(*error) : py::none();
           },
           "The op's coll.Error (not raised) once it failed; None while running or after success.")
      .def("get", [](PyWork& w, py::object timeout) {
             if (!waitFor(w, timeout)) {
               throw Error(ErrorCode::Timeout, "Work.get: op #" + std::to_string(w.work.sequence()) +
                                                   " still running after the caller's timeout");
             }
             return w.result;
           },
           py::arg("timeout") = py::none(),
           "get(timeout=None) -> numpy.ndarray | None\n\n"
           "Waits like wait() and returns ``result``. Raises coll.Error (code 'Timeout') if the op\n"
           "is still running after ``timeout`` seconds.")
      .def_property_readonly("result", [](const PyWork& w) { return w.result; },
                             "The array the op writes its result into (the caller's recv, or one it\n"
                             "allocated), or None (send, barrier, non-root gather). Read it after wait().")
      .def_property_readonly("sequence", [](const PyWork& w) { return w.work.sequence(); },
                             "The op's sequence number on its communicator (0, 1, 2, ... in issue order).")
      .def_property_readonly("source", [](const PyWork& w) { return w.work.source(); },
                             "A finished receive's sender (for recv from any source); -1 otherwise.")
      .def("__repr__", [](const PyWork& w) {
        return "<coll.Work #" + std::to_string(w.work.sequence()) + (w.work.test() ? " done>" : " running>");
      });
}

}  // namespace coll::python
