// coll._torch: the extension behind `import coll.torch`, which registers the backend.
//
//   import torch.distributed as dist, coll.torch
//   dist.init_process_group("coll")          # torchrun's environment, or init_method=...
//
// Built against the same pybind11 and C++ ABI as the torch it runs with (Debian's torch 1.13
// through CMake; a pip torch through bindings/python/build_for_python.py), so the Store and
// ProcessGroup (torch 2.x: Backend) types pass between torch and this module as torch's own.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

PYBIND11_MODULE(_torch, m) {
  namespace py = pybind11;
  using coll::torch_backend::ProcessGroupColl;
  py::module_::import("torch.distributed");  // registers c10d's Store and ProcessGroup/Backend types first
  m.doc() = "torch.distributed backend 'coll' (use `import coll.torch`)";
#ifdef COLL_HAVE_CUDA
  m.attr("has_cuda") = true;  // libcoll takes device buffers: CUDA tensors go through them
#else
  m.attr("has_cuda") = false;
#endif
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
         const std::string& profiling_name) -> c10::intrusive_ptr<coll::torch_backend::BackendBase> {
        return c10::make_intrusive<ProcessGroupColl>(store, rank, size, timeout, profiling_name);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("profiling_name") = "coll",
      py::call_guard<py::gil_scoped_release>(),
      "The creator torch.distributed calls for backend 'coll': (prefix_store, rank, size, timeout).");
}
