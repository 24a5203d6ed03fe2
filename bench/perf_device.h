// Device (CUDA) buffers for the perf programs (-X 1): the ops then run on GPU memory, as
// nccl-tests' do, and the header reports the GPU's own device-to-device copy bandwidth, the
// physical limit such a run is measured against. A build without CUDA refuses -X 1.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace coll::bench {

class DeviceArena {
 public:
  // bytes of memory on GPU `gpu` (the rank's local rank modulo the GPUs there are).
  static std::unique_ptr<DeviceArena> make(size_t bytes, int local_rank);
  virtual ~DeviceArena() = default;
  virtual std::byte* data() const = 0;
  virtual void upload(const void* host, size_t bytes) = 0;  // to the start of the arena
  virtual void download(void* host, size_t bytes) = 0;
};

// "NVIDIA H100 80GB HBM3 (GPU 0): device-to-device copy of 256 MiB at 1510.2 GB/s (bytes
// copied per second, cudaMemcpy, median of 10)".
std::string describeDeviceCopy(size_t bytes, int local_rank);

}  // namespace coll::bench
