// Where an op's tensors live and which stream it runs on: every tensor of a call on the CPU, or
// every one on the same GPU, ordered on torch's current stream of that GPU (as torch's nccl
// backend orders its ops). Only generic c10 types here, so the backend builds against a
// CPU-only torch; the CUDA stream handle comes through c10's device-generic interface.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <functional>
#include <vector>

#include "coll/communicator.h"

namespace coll::torch_backend {

struct Placement {
  c10::Device device{c10::kCPU};
  c10::Stream stream{c10::Stream::DEFAULT, c10::Device(c10::kCPU)};
  coll::Stream raw = nullptr;  // the cudaStream_t handed to coll; null for host tensors

  bool onGpu() const { return device.is_cuda(); }
  // The devices a Future of this op's tensors must declare (none for the CPU).
  std::vector<c10::Device> futureDevices() const;
};

// Checks that the defined tensors of one call share a device (all on the CPU, or all on one
// GPU) and that this build can take them; `op` names the call in the error.
Placement placementOf(const std::vector<at::Tensor>& tensors, const char* op);

// The copy of a collective's result into the caller's tensors (lists, strided views). For a GPU
// op it is queued now, on the op's stream right behind the op (coll orders the op before the
// work queued after the call), as nccl's would be; what comes back waits for that copy alone,
// for the Completer to run before it completes the Work. For host tensors, `copy` itself, to
// run then. Call it right after issuing the op. On torch's default stream (a null handle) coll
// does not order the op before later work (communicator.h): there the copy waits for the op as
// a staged receive's does (copyWhenArrived).
std::function<void()> queueCopyBack(const Placement& where, std::function<void()> copy);

// The copy of a staged receive into the caller's GPU tensor, to run when the bytes have
// arrived (on the Completer's thread): on a stream of its own that first waits for the work
// queued on the op's stream before the call (recorded now), then waited for. For host
// tensors, `copy` itself.
std::function<void()> copyWhenArrived(const Placement& where, std::function<void()> copy);

// Pinned host tensors for staging a GPU tensor: an empty one of t's shape and dtype, and a
// contiguous copy of t (taken after the work queued on torch's current stream).
at::Tensor pinnedLike(const at::Tensor& t);
at::Tensor pinnedCopyOf(const at::Tensor& t);

}  // namespace coll::torch_backend
