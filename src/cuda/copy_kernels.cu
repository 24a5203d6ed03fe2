// The fan-out copy behind device_copy.h: block row y copies source y; each thread loads a
// piece of it once and stores it to every destination. 16 bytes at a time where every
// pointer (and the destination step) is 16-byte aligned, bytes otherwise and for the tail.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_copy.h"
#include "cuda/launch_shape.h"

namespace coll::cuda {
namespace {

template <class Piece>
__global__ void fanOutKernel(FanOut fan, size_t pieces) {
  const int s = blockIdx.y;
  const Piece* src = static_cast<const Piece*>(fan.src[s]);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pieces; i += stride) {
    const Piece x = src[i];
    for (int d = 0; d < fan.n_dst; ++d)
      reinterpret_cast<Piece*>(static_cast<char*>(fan.dst[d]) + s * fan.dst_step)[i] = x;
  }
}

template <class Piece>
cudaError_t launchPieces(const FanOut& fan, size_t pieces, cudaStream_t stream) {
  dim3 grid(blocksFor(pieces), static_cast<unsigned>(fan.n_src));
  fanOutKernel<Piece><<<grid, kThreads, 0, stream>>>(fan, pieces);
  return cudaGetLastError();
}

bool aligned(const FanOut& fan) {
  auto ok = [](uintptr_t v) { return v % sizeof(uint4) == 0; };
  if (!ok(fan.dst_step)) return false;
  for (int s = 0; s < fan.n_src; ++s)
    if (!ok(reinterpret_cast<uintptr_t>(fan.src[s]))) return false;
  for (int d = 0; d < fan.n_dst; ++d)
    if (!ok(reinterpret_cast<uintptr_t>(fan.dst[d]))) return false;
  return true;
}

}  // namespace

int launchFanOut(const FanOut& fan, size_t bytes, void* stream_ptr) {
  if (bytes == 0 || fan.n_src == 0 || fan.n_dst == 0) return cudaSuccess;
  if (fan.n_src < 0 || fan.n_src > kMaxOperands || fan.n_dst < 0 || fan.n_dst > kMaxOperands)
    return cudaErrorInvalidValue;
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  const size_t vectors = aligned(fan) ? bytes / sizeof(uint4) : 0;
  if (vectors > 0) {
    cudaError_t e = launchPieces<uint4>(fan, vectors, stream);
    if (e != cudaSuccess) return e;
  }
  const size_t done = vectors * sizeof(uint4);
  if (done == bytes) return cudaSuccess;
  FanOut tail = fan;
  for (int s = 0; s < fan.n_src; ++s) tail.src[s] = static_cast<const char*>(fan.src[s]) + done;
  for (int d = 0; d < fan.n_dst; ++d) tail.dst[d] = static_cast<char*>(fan.dst[d]) + done;
  return launchPieces<unsigned char>(tail, bytes - done, stream);
}

}  // namespace coll::cuda
