// Every collective and send/recv on device buffers, 2 and 3 ranks sharing the machine's GPUs
// (all on GPU 0 where there is one), against the closed formulas of reduction_values.h.
// Registered twice (tests/CMakeLists.txt): as is, ranks of one host take cuda_ipc; with
// --env=COLL_CUDA_IPC=0 they stage through pinned host memory in small chunks. Skips, saying
// why, where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda/gpu_probe.h"
#include "multirank/rank_runner.h"
#include "multirank/reduction_values.h"

namespace coll::test {
namespace {

#define CUDA_CHECK(call)                                                                    \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    RANK_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
  } while (0)

constexpr DataType kTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                               DataType::u8,  DataType::i32, DataType::u32, DataType::i64, DataType::u64};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};

// A device buffer with a host mirror.
struct Mirror {
  Mirror(DataType t, size_t count) : type(t), host(count * sizeOf(t) + 1) {
    if (cudaMalloc(&dev, host.size()) != cudaSuccess) dev = nullptr;
  }
  ~Mirror() { cudaFree(dev); }
  void up() { cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice); }
  void down() { cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost); }
  char* at(size_t elems) const { return static_cast<char*>(dev) + elems * sizeOf(type); }
  double get(size_t i) const { return load(type, host.data(), i); }
  void set(size_t i, double v) { store(type, host.data(), i, v); }
  DataType type;
  std::vector<char> host;
  void* dev = nullptr;
};

class CudaCollectives : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string why = whyNoGpuInChild();
    if (!why.empty()) GTEST_SKIP() << "no GPU for device buffers: " << why;
  }
  void run(const RankBody& body) {
    for (const RankOutcome& o : runRanks(GetParam(), [&](Communicator& c, Rank& self) {
           RANK_CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
           body(c, self);
         }))
      EXPECT_TRUE(o.exited && o.exit_code == 0) << o.describe();
  }
};

void checkReduction(const Mirror& m, DataType t, ReduceOp op, int n, size_t count, size_t first, const char* what) {
  for (size_t i = 0; i < count; ++i) {
    double want = roundTo(t, expectedValue(t, op, n, first + i));
    RANK_CHECK(m.get(i) == want, "%s %s %s element %zu: got %g, want %g", what, toString(t), toString(op), first + i,
               m.get(i), want);
  }
}

TEST_P(CudaCollectives, AllreduceEveryTypeAndOpInAndOutOfPlace) {
  run([](Communicator& c, Rank& self) {
    const int n = c.size();
    for (DataType t : kTypes)
      for (ReduceOp op : kOps)
        for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{20011}})
          for (bool in_place : {false, true}) {
            Mirror in(t, count), out(t, count);
            for (size_t i = 0; i < count; ++i) in.set(i, inputValue(t, op, self.rank, i));
            in.up();
            c.allreduce(in.dev, in_place ? in.dev : out.dev, count, t, op).wait();
            Mirror& result = in_place ? in : out;
            result.down();
            checkReduction(result, t, op, n, count, 0, in_place ? "in-place allreduce" : "allreduce");
          }
  });
}

TEST_P(CudaCollectives, ReduceAndReduceScatter) {
  run([](Communicator& c, Rank& self) {
    const int n = c.size();
    for (DataType t : {DataType::f32, DataType::bf16, DataType::i64})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::avg}) {
        const size_t count = 1031;
        Mirror in(t, count * n), out(t, count * n);
        for (size_t i = 0; i < count * n; ++i) in.set(i, inputValue(t, op, self.rank, i));
        in.up();
        c.reduce(in.dev, out.dev, count, t, op, n - 1).wait();
        if (self.rank == n - 1) {
          out.down();
          checkReduction(out, t, op, n, count, 0, "reduce");
        }
        c.reduceScatter(in.dev, out.dev, count, t, op).wait();
        out.down();
        checkReduction(out, t, op, n, count, count * self.rank, "reduce-scatter");
        c.reduceScatter(in.dev, in.at(count * self.rank), count, t, op).wait();  // in place
        in.down();
        Mirror mine(t, count);
        std::memcpy(mine.host.data(), in.host.data() + count * self.rank * sizeOf(t), count * sizeOf(t));
        checkReduction(mine, t, op, n, count, count * self.rank, "in-place reduce-scatter");
      }
  });
}

// Rank r's element i of a data-movement op, distinct per (rank, index).
double moved(int r, size_t i) { return static_cast<double>((r * 7919 + static_cast<int>(i % 4093)) % 30011); }

TEST_P(CudaCollectives, BroadcastAllgatherAlltoallGatherScatter) {
  run([](Communicator& c, Rank& self) {
    const int n = c.size(), r = self.rank;
    const DataType t = DataType::i32;
    for (size_t count : {size_t{1}, size_t{4099}}) {
      Mirror in(t, count * n), out(t, count * n);
      for (size_t i = 0; i < count * n; ++i) in.set(i, moved(r, i));
      in.up();
      c.broadcast(in.dev, out.dev, count, t, 1).wait();
      out.down();
      for (size_t i = 0; i < count; ++i) RANK_CHECK(out.get(i) == moved(1, i), "broadcast element %zu", i);
      c.allgather(in.dev, out.dev, count, t).wait();
      out.down();
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i)
          RANK_CHECK(out.get(p * count + i) == moved(p, i), "allgather chunk %d element %zu", p, i);
      c.alltoall(in.dev, out.dev, count, t).wait();
      out.down();
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i)
          RANK_CHECK(out.get(p * count + i) == moved(p, r * count + i), "alltoall chunk %d element %zu", p, i);
      c.gather(in.dev, out.dev, count, t, 0).wait();
      if (r == 0) {
        out.down();
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < count; ++i)
            RANK_CHECK(out.get(p * count + i) == moved(p, i), "gather chunk %d element %zu", p, i);
      }
      c.scatter(in.dev, out.dev, count, t, n - 1).wait();
      out.down();
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(out.get(i) == moved(n - 1, r * count + i), "scatter element %zu", i);
      c.allgather(in.at(count * r), in.dev, count, t).wait();  // in place: every chunk but r's arrives
      in.down();
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < count; ++i)
          RANK_CHECK(in.get(p * count + i) == moved(p, p * count + i), "in-place allgather chunk %d element %zu", p, i);
    }
  });
}

TEST_P(CudaCollectives, SendRecvRingAndGroup) {
  run([](Communicator& c, Rank& self) {
    const int n = c.size(), r = self.rank;
    const size_t count = 300007;
    Mirror mine(DataType::f32, count), theirs(DataType::f32, count);
    for (size_t i = 0; i < count; ++i) mine.set(i, moved(r, i));
    mine.up();
    c.groupStart();
    c.send(mine.dev, count, DataType::f32, (r + 1) % n);
    c.recv(theirs.dev, count, DataType::f32, (r + n - 1) % n);
    c.groupEnd();
    c.barrier().wait();
    theirs.down();
    for (size_t i = 0; i < count; i += 97)
      RANK_CHECK(theirs.get(i) == moved((r + n - 1) % n, i), "grouped recv element %zu", i);
    if (r == 0) c.send(mine.dev, count, DataType::f32, 1).wait();
    if (r == 1) {
      c.recv(theirs.dev, count, DataType::f32, 0).wait();
      theirs.down();
      for (size_t i = 0; i < count; i += 97) RANK_CHECK(theirs.get(i) == moved(0, i), "recv element %zu", i);
    }
  });
}

// Ordered on a stream: the input is written by an async copy queued just before the op, the
// result is read by one queued just after, and nobody waits on the Work in between. The host
// side is pinned, as asynchronous copies need: a copy to pageable memory blocks its thread
// inside the driver until the stream reaches it, and the op's own CUDA calls wait there too.
TEST_P(CudaCollectives, StreamOrderedAllreduce) {
  run([](Communicator& c, Rank& self) {
    const int n = c.size();
    const DataType t = DataType::f32;
    const size_t count = 1 << 20;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Mirror buf(t, count), result(t, count);
    void* pinned_in = nullptr;
    void* pinned_out = nullptr;
    CUDA_CHECK(cudaMallocHost(&pinned_in, count * 4));
    CUDA_CHECK(cudaMallocHost(&pinned_out, count * 4));
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < count; ++i) buf.set(i, inputValue(t, ReduceOp::sum, self.rank, i + round));
      std::memcpy(pinned_in, buf.host.data(), count * 4);
      CUDA_CHECK(cudaMemcpyAsync(buf.dev, pinned_in, count * 4, cudaMemcpyHostToDevice, stream));
      coll::Work w = c.allreduce(buf.dev, buf.dev, count, t, ReduceOp::sum, stream);
      CUDA_CHECK(cudaMemcpyAsync(pinned_out, buf.dev, count * 4, cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      std::memcpy(result.host.data(), pinned_out, count * 4);
      RANK_CHECK(w.test(), "the stream ran past the op before it completed");
      for (size_t i = 0; i < count; i += 101) {
        double want = roundTo(t, expectedValue(t, ReduceOp::sum, n, i + round));
        RANK_CHECK(result.get(i) == want, "round %d element %zu: got %g, want %g", round, i, result.get(i), want);
      }
    }
    cudaFreeHost(pinned_in);
    cudaFreeHost(pinned_out);
    cudaStreamDestroy(stream);
  });
}

// A staged op on a stream returns before its input is ready: the stream is blocked behind a host
// function that waits for a flag the test sets only after the call. A call that waited for the
// op would wait for that flag too; the host function gives up after 10 s and says so. (A
// cuda_ipc op on a stream finishes before the call returns: docs/CUDA.md, "Limits".)
TEST_P(CudaCollectives, StagedIssueOnAStreamDoesNotWaitForTheOp) {
  const char* ipc = std::getenv("COLL_CUDA_IPC");
  if (!(ipc && std::string(ipc) == "0"))
    GTEST_SKIP() << "cuda_ipc ops on a stream finish before the call returns (docs/CUDA.md, Limits); this checks "
                    "the staged path (COLL_CUDA_IPC=0)";
  run([](Communicator& c, Rank& self) {
    const int n = c.size();
    const DataType t = DataType::f32;
    const size_t count = (1 << 18) + 3;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Mirror buf(t, count), result(t, count);
    struct Gate {
      std::atomic<bool> open{false};
      std::atomic<bool> gave_up{false};
    } gate;
    CUDA_CHECK(cudaLaunchHostFunc(
        stream,
        [](void* p) {
          auto* g = static_cast<Gate*>(p);
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!g->open.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          g->gave_up = !g->open.load();
        },
        &gate));
    void* pinned = nullptr;  // pageable memory would make the copies wait for the stream
    CUDA_CHECK(cudaMallocHost(&pinned, count * 4));
    for (size_t i = 0; i < count; ++i) buf.set(i, inputValue(t, ReduceOp::sum, self.rank, i));
    std::memcpy(pinned, buf.host.data(), count * 4);
    CUDA_CHECK(cudaMemcpyAsync(buf.dev, pinned, count * 4, cudaMemcpyHostToDevice, stream));
    coll::Work w = c.allreduce(buf.dev, buf.dev, count, t, ReduceOp::sum, stream);
    const bool done_at_return = w.test();
    gate.open = true;
    CUDA_CHECK(cudaMemcpyAsync(pinned, buf.dev, count * 4, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(result.host.data(), pinned, count * 4);
    cudaFreeHost(pinned);
    RANK_CHECK(!gate.gave_up.load(), "the call waited for the stream (10 s), so it blocked the host");
    RANK_CHECK(!done_at_return, "the op was done before its input was ready");
    RANK_CHECK(w.test(), "the stream ran past the op before it completed");
    checkReduction(result, t, ReduceOp::sum, n, count, 0, "stream-ordered allreduce");
    cudaStreamDestroy(stream);
  });
}

TEST_P(CudaCollectives, HostAndDeviceBuffersTogetherAreRefused) {
  run([](Communicator& c, Rank&) {
    Mirror dev(DataType::f32, 16);
    std::vector<float> host(16);
    try {
      c.allreduce(dev.dev, host.data(), 16, DataType::f32, ReduceOp::sum);
      RANK_CHECK(false, "a host receive buffer beside a device send buffer must be refused");
    } catch (const Error& e) {
      RANK_CHECK(e.code() == ErrorCode::InvalidArgument && std::strstr(e.what(), "device"), "wrong error: %s",
                 e.what());
    }
    c.barrier().wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaCollectives, ::testing::Values(2, 3));

}  // namespace
}  // namespace coll::test
