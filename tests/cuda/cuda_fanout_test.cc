// The fan-out copy kernel (cuda/device_copy.h) against copies made on the host: one and several
// sources, one to five destinations, a destination step (all-gather) or none (broadcast), sizes
// that are and are not whole 16-byte vectors, aligned and unaligned buffers, a destination that
// is its own source. Skips, saying why, where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "cuda/device_copy.h"
#include "cuda/runtime.h"

namespace coll {
namespace {

class DeviceFanOut : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::gpuPresent()) GTEST_SKIP() << "no GPU to run the CUDA kernels on: " << cuda::whyNoGpu();
  }
  ~DeviceFanOut() override {
    for (void* p : allocations_) cudaFree(p);
  }
  char* allocate(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes + 64), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0xEE, bytes + 64), cudaSuccess);
    allocations_.push_back(p);
    return static_cast<char*>(p);
  }

  // n_src sources of `bytes` each into n_dst destinations of n_src * bytes (all-gather's
  // layout: source s at s * bytes); `offset` shifts every buffer from its allocation's start.
  // With in_place, source s is destination s's slot s.
  void check(int n_src, int n_dst, size_t bytes, size_t offset, bool in_place) {
    const size_t slot = n_src > 1 ? bytes : 0;
    std::vector<std::vector<char>> src(static_cast<size_t>(n_src), std::vector<char>(bytes));
    for (int s = 0; s < n_src; ++s)
      for (size_t i = 0; i < bytes; ++i) src[s][i] = static_cast<char>(i * 7 + s * 31 + 1);
    cuda::FanOut fan;
    fan.n_src = n_src;
    fan.n_dst = n_dst;
    fan.dst_step = slot;
    const size_t dst_bytes = n_src * bytes;
    for (int d = 0; d < n_dst; ++d) fan.dst[d] = allocate(dst_bytes) + offset;
    for (int s = 0; s < n_src; ++s) {
      char* at = in_place && s < n_dst ? static_cast<char*>(fan.dst[s]) + s * slot : allocate(bytes) + offset;
      ASSERT_EQ(cudaMemcpy(at, src[s].data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      fan.src[s] = at;
    }
    ASSERT_EQ(cuda::launchFanOut(fan, bytes, nullptr), 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int d = 0; d < n_dst; ++d) {
      std::vector<char> got(dst_bytes + 1);
      ASSERT_EQ(cudaMemcpy(got.data(), fan.dst[d], got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      for (int s = 0; s < n_src; ++s)
        for (size_t i = 0; i < bytes; ++i)
          ASSERT_EQ(got[s * slot + i], src[s][i]) << n_src << " sources, " << n_dst << " destinations, " << bytes
                                                  << " bytes at offset " << offset << ": destination " << d
                                                  << " source " << s << " byte " << i;
      EXPECT_EQ(static_cast<unsigned char>(got[dst_bytes]), 0xEE) << "wrote past the end";
    }
  }

 private:
  std::vector<void*> allocations_;
};

TEST_F(DeviceFanOut, BroadcastOneSourceIntoEveryDestination) {
  for (size_t bytes : {size_t{1}, size_t{15}, size_t{16}, size_t{4099}, size_t{1 << 20}})
    for (int n_dst = 1; n_dst <= 5; ++n_dst) check(1, n_dst, bytes, 0, false);
}

TEST_F(DeviceFanOut, AllgatherEverySourceIntoItsSlot) {
  for (size_t bytes : {size_t{3}, size_t{48}, size_t{65537}})
    for (int n = 2; n <= 5; ++n) {
      check(n, n, bytes, 0, false);
      check(n, n, bytes, 0, true);
    }
}

TEST_F(DeviceFanOut, UnalignedBuffersAndStepsAreCopiedBytewise) {
  for (size_t offset : {size_t{1}, size_t{8}})
    for (size_t bytes : {size_t{100}, size_t{4096}}) {
      check(1, 3, bytes, offset, false);
      check(3, 3, bytes, offset, true);
    }
  check(3, 3, 4100, 0, false);  // a step of 4100: not a whole number of vectors
}

TEST_F(DeviceFanOut, NothingToCopyLaunchesNothingAndTooManyIsRefused) {
  cuda::FanOut fan;
  EXPECT_EQ(cuda::launchFanOut(fan, 100, nullptr), 0);
  fan.n_src = 1;
  fan.n_dst = cuda::kMaxOperands + 1;
  EXPECT_NE(cuda::launchFanOut(fan, 100, nullptr), 0);
}

}  // namespace
}  // namespace coll
