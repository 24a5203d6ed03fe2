#include "placement.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <memory>
#include <thread>

namespace coll::torch_backend {
namespace {

// The backend's handle to a c10 stream (a cudaStream_t for CUDA). torch 2.x names the
// accessor native_handle(), later stream_handle(); torch 1.x has neither.
template <class S>
void* handleOf(const S& s) {
  if constexpr (requires { s.stream_handle(); }) {
    return s.stream_handle();
  } else if constexpr (requires { s.native_handle(); }) {
    return s.native_handle();
  } else {
    TORCH_CHECK(false, "coll: this torch cannot hand a CUDA stream to another library (c10::Stream has no ",
                "native_handle): CUDA tensors need torch 2.1 or later");
    return nullptr;
  }
}

void checkBuildTakes(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "coll ", op, ": tensor on ", t.device().str(),
              "; the coll backend takes CPU and CUDA tensors");
#ifndef COLL_HAVE_CUDA
  TORCH_CHECK(t.device().is_cpu(), "coll ", op, ": tensor on ", t.device().str(), ", but this libcoll was built ",
              "without CUDA (nvcc was not found at configure time; see README, \"GPU buffers\"): rebuild it with ",
              "CUDA, move the tensor to the CPU, or use the nccl backend");
#endif
}

}  // namespace

std::vector<c10::Device> Placement::futureDevices() const {
  if (!onGpu()) return {};
  return {device};
}

Placement placementOf(const std::vector<at::Tensor>& tensors, const char* op) {
  Placement where;
  const at::Tensor* first = nullptr;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    checkBuildTakes(t, op);
    if (!first) {
      first = &t;
      continue;
    }
    TORCH_CHECK(t.device() == first->device(), "coll ", op, ": tensors on ", first->device().str(), " and ",
                t.device().str(), " in one call; pass every tensor of a call on the same device (CPU or one GPU)");
  }
  if (!first || first->device().is_cpu()) return where;
  where.device = first->device();
  where.stream = c10::impl::getDeviceGuardImpl(where.device.type())->getStream(where.device);
  where.raw = handleOf(where.stream);
  return where;
}

namespace {

// An event recorded on `stream` now (c10::Event cannot be copied into a std::function).
std::shared_ptr<c10::Event> recordOn(const c10::Stream& stream) {
  auto event = std::make_shared<c10::Event>(stream.device_type());
  event->record(stream);
  return event;
}

// Host-side wait for one event (torch 1.x's c10::Event has no synchronize()).
void waitFor(const c10::Event& event) {
  while (!event.query()) std::this_thread::yield();
}

}  // namespace

std::function<void()> queueCopyBack(const Placement& where, std::function<void()> copy) {
  if (!copy || !where.onGpu()) return copy;
  if (!where.raw) return copyWhenArrived(where, std::move(copy));  // queued now, it read the output too early
  {
    c10::StreamGuard guard(where.stream);
    copy();
  }
  auto done = recordOn(where.stream);
  return [done] { waitFor(*done); };
}

std::function<void()> copyWhenArrived(const Placement& where, std::function<void()> copy) {
  if (!copy || !where.onGpu()) return copy;
  auto before = recordOn(where.stream);
  return [before, device = where.device, copy = std::move(copy)] {
    const c10::Stream side = c10::impl::getDeviceGuardImpl(device.type())->getStreamFromGlobalPool(device);
    before->block(side);
    c10::StreamGuard guard(side);
    copy();
    waitFor(*recordOn(side));
  };
}

at::Tensor pinnedLike(const at::Tensor& t) {
  return at::empty(t.sizes(), t.options().device(c10::kCPU).pinned_memory(true));
}

at::Tensor pinnedCopyOf(const at::Tensor& t) {
  at::Tensor host = pinnedLike(t);
  host.copy_(t);  // blocking: waits for the stream's earlier work, then for the copy
  return host;
}

}  // namespace coll::torch_backend
