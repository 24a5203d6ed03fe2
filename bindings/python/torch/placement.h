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

// What must follow a GPU op on the Completer's thread (copying results into the caller's
// tensors): run on the op's device and stream, then waited for, so that the Work completes
// with every tensor final. For host tensors, `f` itself.
std::function<void()> onOpStream(const Placement& where, std::function<void()> f);

// Pinned host tensors for staging a GPU tensor: an empty one of t's shape and dtype, and a
// contiguous copy of t (taken after the work queued on torch's current stream).
at::Tensor pinnedLike(const at::Tensor& t);
at::Tensor pinnedCopyOf(const at::Tensor& t);

}  // namespace coll::torch_backend
