// The device reduction kernels against the host kernels (reduce/reduce.h), which define the
// result: every dtype and op, 1 to 5 operands, odd sizes, in place and out of place, one and
// several outputs, buffers 16-byte aligned (the vector kernel and its scalar tail) or not. Skips, saying why, where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda/device_reduce.h"
#include "cuda/ipc_handles.h"
#include "cuda/runtime.h"
#include "multirank/typed_data.h"
#include "reduce/reduce.h"

namespace coll {
namespace {

constexpr DataType kTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                               DataType::u8,  DataType::i32, DataType::u32, DataType::i64, DataType::u64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};

// Values that are finite in every type (NaN bit patterns differ between conversions), mixed
// signs, with fractions for floating types, and integer overflow for sum and prod.
std::vector<char> values(DataType t, size_t count, uint32_t seed) {
  std::vector<char> buf(count * sizeOf(t));
  std::mt19937 gen(seed);
  for (size_t i = 0; i < count; ++i) {
    double v = static_cast<double>(static_cast<int>(gen() % 2001) - 1000);
    if (test::isFloating(t)) v /= 8;
    else if (!test::isSigned(t)) v = static_cast<double>(gen() % 256);
    test::store(t, buf.data(), i, v);
  }
  if (!test::isFloating(t))  // full-range bytes: sums and products wrap
    for (size_t i = 0; i < buf.size(); i += 3) buf[i] = static_cast<char>(gen());
  return buf;
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  char* get() const { return static_cast<char*>(p); }
  void* p = nullptr;
};

class DeviceReduce : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::gpuPresent()) GTEST_SKIP() << "no GPU to run the CUDA kernels on: " << cuda::whyNoGpu();
  }

  // n_in operands, n_out outputs (output 0 is operand 0 when in_place). `shift`: operand 1 starts
  // that many elements into its allocation (another alignment than the others').
  void check(DataType t, ReduceOp op, size_t count, int n_in, int n_out, bool in_place, size_t shift = 0) {
    const size_t bytes = count * sizeOf(t);
    std::vector<std::vector<char>> host;
    std::vector<std::unique_ptr<DeviceBuffer>> dev;
    cuda::Operands ops;
    ops.n_in = n_in;
    ops.n_out = n_out;
    for (int k = 0; k < n_in; ++k) {
      host.push_back(values(t, count, static_cast<uint32_t>(k * 7919 + count)));
      const size_t skip = k == 1 ? shift * sizeOf(t) : 0;
      dev.push_back(std::make_unique<DeviceBuffer>(bytes + skip));
      ASSERT_EQ(cudaMemcpy(dev.back()->get() + skip, host.back().data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      ops.in[k] = dev.back()->get() + skip;
    }
    for (int k = 0; k < n_out; ++k) {
      if (in_place && k == 0) {
        ops.out[k] = dev[0]->get();
        continue;
      }
      dev.push_back(std::make_unique<DeviceBuffer>(bytes));
      ops.out[k] = dev.back()->get();
    }
    std::vector<char> want = host[0];
    for (int k = 1; k < n_in; ++k) reduce::reduceInto(want.data(), host[k].data(), count, t, op);
    if (op == ReduceOp::avg) reduce::divideBy(want.data(), count, t, n_in);
    ASSERT_EQ(cuda::launchReduce(ops, count, t, op, n_in, nullptr), 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int k = 0; k < n_out; ++k) {
      std::vector<char> got(bytes);
      ASSERT_EQ(cudaMemcpy(got.data(), ops.out[k], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(std::memcmp(got.data() + i * sizeOf(t), want.data() + i * sizeOf(t), sizeOf(t)), 0)
            << toString(t) << " " << toString(op) << " count " << count << " operands " << n_in << " output " << k
            << " element " << i << ": got " << test::load(t, got.data(), i) << ", want "
            << test::load(t, want.data(), i);
    }
  }
};

TEST_F(DeviceReduce, EveryTypeAndOpMatchesTheHostKernels) {
  for (DataType t : kTypes)
    for (ReduceOp op : kOps)
      for (size_t count : {size_t{1}, size_t{7}, size_t{1031}, size_t{65537}}) check(t, op, count, 3, 1, false);
}

TEST_F(DeviceReduce, OneToFiveOperandsInPlaceAndIntoSeveralOutputs) {
  for (DataType t : {DataType::f32, DataType::bf16, DataType::i64})
    for (int n = 1; n <= 5; ++n) {
      check(t, ReduceOp::sum, 4099, n, 1, true);
      check(t, ReduceOp::avg, 4099, n, n, true);
      check(t, ReduceOp::max, 4099, n, 2, false);
    }
}

TEST_F(DeviceReduce, BuffersOfAnotherAlignmentTakeTheScalarKernel) {
  for (DataType t : kTypes)
    for (size_t shift : {size_t{1}, size_t{3}}) {
      check(t, ReduceOp::sum, 1031, 3, 2, false, shift);
      check(t, ReduceOp::avg, 4099, 2, 2, true, shift);
    }
}

TEST_F(DeviceReduce, ZeroElementsLaunchNothing) {
  cuda::Operands ops;
  ops.n_in = 1;
  ops.n_out = 1;
  EXPECT_EQ(cuda::launchReduce(ops, 0, DataType::f32, ReduceOp::sum, 1, nullptr), 0);
}

TEST_F(DeviceReduce, TooManyOperandsAreRefused) {
  cuda::Operands ops;
  ops.n_in = cuda::kMaxOperands + 1;
  EXPECT_NE(cuda::launchReduce(ops, 10, DataType::f32, ReduceOp::sum, 1, nullptr), 0);
}

TEST_F(DeviceReduce, DevicePointersAreRecognised) {
  DeviceBuffer dev(4096);
  std::string why;
  cuda::Pointer p = cuda::inspect(dev.get() + 100, &why);
  EXPECT_TRUE(p.device) << why;
  EXPECT_EQ(p.ordinal, 0) << why;
  std::vector<char> host(100);
  EXPECT_FALSE(cuda::inspect(host.data(), &why).device) << why;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  EXPECT_FALSE(cuda::inspect(pinned, &why).device) << why;
  cudaFreeHost(pinned);
}

// The IPC export cache tells allocations apart by the driver's buffer ID (ipc_handles.h).
TEST_F(DeviceReduce, EveryAllocationHasItsOwnBufferId) {
  unsigned long long first = 0;
  void* address = nullptr;
  {
    DeviceBuffer a(1 << 20);
    first = cuda::bufferId(a.get() + 4096);
    EXPECT_NE(first, 0u);
    EXPECT_EQ(cuda::bufferId(a.get()), first);
    address = a.get();
  }
  DeviceBuffer b(1 << 20);  // likely at the freed one's address
  EXPECT_NE(cuda::bufferId(b.get()), first) << "allocation at " << b.get() << ", the freed one was at " << address;
  EXPECT_NE(cuda::bufferId(b.get()), 0u);
}

}  // namespace
}  // namespace coll
