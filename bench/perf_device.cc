#include "perf_device.h"

#include <stdexcept>

#ifdef COLL_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>
#endif

namespace coll::bench {

#ifdef COLL_HAVE_CUDA
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

int pickGpu(int local_rank) {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  if (n == 0) throw std::runtime_error("-X 1: no GPU");
  int gpu = local_rank % n;
  check(cudaSetDevice(gpu), "cudaSetDevice");
  return gpu;
}

class CudaArena final : public DeviceArena {
 public:
  CudaArena(size_t bytes, int local_rank) {
    pickGpu(local_rank);
    check(cudaMalloc(&p_, std::max<size_t>(bytes, 1)), "cudaMalloc");
    check(cudaMemset(p_, 0, std::max<size_t>(bytes, 1)), "cudaMemset");
  }
  ~CudaArena() override { cudaFree(p_); }
  std::byte* data() const override { return static_cast<std::byte*>(p_); }
  void upload(const void* host, size_t bytes) override {
    check(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
  }
  void download(void* host, size_t bytes) override {
    check(cudaMemcpy(host, p_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
  }

 private:
  void* p_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceArena> DeviceArena::make(size_t bytes, int local_rank) {
  return std::make_unique<CudaArena>(bytes, local_rank);
}

std::string describeDeviceCopy(size_t bytes, int local_rank) {
  int gpu = pickGpu(local_rank);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
  CudaArena a(bytes, local_rank), b(bytes, local_rank);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    check(cudaMemcpy(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy (device to device)");
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= 2) ms.push_back(t);  // two warm-ups
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  double gbps = static_cast<double>(bytes) / 1e6 / ms[ms.size() / 2];
  char line[512];
  std::snprintf(line, sizeof line,
                "%s (GPU %d): device-to-device copy of %zu MiB at %.1f GB/s (bytes copied per second, cudaMemcpy, "
                "median of 10)", prop.name, gpu, bytes >> 20, gbps);
  return line;
}

#else

std::unique_ptr<DeviceArena> DeviceArena::make(size_t, int) {
  throw std::runtime_error("-X 1 needs a CUDA build of coll (nvcc was not found at configure time)");
}
std::string describeDeviceCopy(size_t, int) { return "no CUDA in this build"; }

#endif

}  // namespace coll::bench
