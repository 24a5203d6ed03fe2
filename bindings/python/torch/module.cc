// coll._torch: the extension behind `import coll.torch`, which registers the backend.
//
//   import torch.distributed as dist, coll.torch
//   dist.init_process_group("coll")          # torchrun's environment, or init_method=...
//
// Built against the same pybind11 (2.10) and C++ ABI as Debian's torch 1.13, so the
// ProcessGroup and Store types pass between torch and this module as torch's own objects.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

PYBIND11_MODULE(_torch, m) {
  namespace py = pybind11;
  using coll::torch_backend::ProcessGroupColl;
  py::module_::import("torch.distributed");  // registers c10d's Store and ProcessGroup types first
  m.doc() = "torch.distributed backend 'coll' (use `import coll.torch`)";
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
         const std::string& profiling_name) -> c10::intrusive_ptr<c10d::ProcessGroup> {
        return c10::make_intrusive<ProcessGroupColl>(store, rank, size, timeout, profiling_name);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("profiling_name") = "coll",
      py::call_guard<py::gil_scoped_release>(),
      "The creator torch.distributed calls for backend 'coll': (prefix_store, rank, size, timeout).");
}
