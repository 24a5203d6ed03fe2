// Shared declarations of the coll Python module. Each concept lives in its own file:
//   module.cc        PYBIND11_MODULE, enums, coll.init()
//   errors.cc        coll.Error (with .code) and the translation of coll::Error
//   arrays.cc        numpy array -> (pointer, count, DataType) checks
//   work.cc          coll.Work (keeps the arrays alive, waits without the GIL)
//   communicator.cc  coll.Communicator and its collectives
//
// The GIL: every call that can block (init, Work.wait, closing a communicator) releases it,
// and so does issuing an op (cheap, but it takes the communicator's queue lock). Nothing in
// coll's progress thread ever touches a Python object: the module hands it raw pointers and
// holds references to the numpy arrays until the op has completed.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

#include "coll/communicator.h"
#include "coll/error.h"
#include "coll/types.h"
#include "coll/version.h"
#include "coll/work.h"

namespace coll::python {

namespace py = pybind11;

// --- errors.cc ---------------------------------------------------------------------------
void bindErrors(py::module_& m);
// A coll.Error instance (not raised) for `error`, with .code set to the ErrorCode's name.
py::object makeError(const Error& error);

// --- arrays.cc ---------------------------------------------------------------------------
// A numpy array checked for use as a coll buffer. Holds a reference to the array.
struct Buffer {
  py::array array;
  void* data = nullptr;
  size_t count = 0;  // elements, the array flattened
  DataType type = DataType::f32;
};

enum class Access { read, write };

// Raises TypeError (not a numpy array, unsupported dtype) or ValueError (not C-contiguous,
// not aligned, read-only when `access` is write). `what` names the argument in messages.
Buffer asBuffer(py::handle object, const char* what, Access access);
// Raises TypeError when the two buffers' element types differ.
void requireSameType(const Buffer& a, const Buffer& b);
// A new C-contiguous array of `type` and `shape`.
py::array newArray(DataType type, const std::vector<py::ssize_t>& shape);
py::dtype dtypeOf(DataType type);
// coll.alloc: a zeroed array in collMemAlloc memory, freed when the last array viewing it goes.
py::array libraryArray(const std::vector<py::ssize_t>& shape, const py::dtype& dtype);

// --- work.cc -----------------------------------------------------------------------------
// coll.Work: a coll::Work plus the numpy arrays the op reads and writes (kept alive until it
// completes) and the array that holds its result.
struct PyWork {
  Work work;
  py::object keep_alive;  // tuple of arrays
  py::object result;      // the output array, or None
};
void bindWork(py::module_& m);

// --- communicator.cc ---------------------------------------------------------------------
// coll.Communicator. Owns the C++ communicator and, for every op not yet complete, the arrays
// it uses (so dropping a Work early cannot free memory the progress thread still touches).
class PyCommunicator {
 public:
  explicit PyCommunicator(std::unique_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  ~PyCommunicator() { close(); }
  PyCommunicator(const PyCommunicator&) = delete;
  PyCommunicator& operator=(const PyCommunicator&) = delete;

  // Waits for queued ops (bounded by their deadlines) without the GIL, then disconnects.
  // Idempotent; every later call raises coll.Error (InvalidArgument).
  void close();
  Communicator& get();
  bool closed() const { return comm_ == nullptr; }

  // Issues `issue(comm)` without the GIL and records what the op keeps alive.
  template <class F>
  PyWork run(py::tuple keep_alive, py::object result, F&& issue) {
    Communicator& comm = get();
    prune();
    Work work;
    {
      py::gil_scoped_release release;
      work = issue(comm);
    }
    pending_.emplace_back(work, keep_alive);
    return PyWork{work, std::move(keep_alive), std::move(result)};
  }

 private:
  void prune();  // ops complete in issue order: drop finished ones from the front

  std::unique_ptr<Communicator> comm_;
  std::deque<std::pair<Work, py::object>> pending_;
};
void bindCommunicator(py::module_& m);

}  // namespace coll::python
