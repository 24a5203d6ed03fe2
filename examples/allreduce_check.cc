// Smallest end-to-end check: every rank all-reduces rank-dependent data and compares.
#include <cstdio>
#include <vector>

#include "coll/communicator.h"

int main() {
  try {
    auto comm = coll::Communicator::fromEnvironment();
    int n = comm->size(), r = comm->rank();
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000003)}) {
      std::vector<float> in(count), out(count);
      for (size_t i = 0; i < count; ++i) in[i] = float(r + 1) * float(i % 13);
      comm->allreduce(in.data(), out.data(), count, coll::DataType::f32, coll::ReduceOp::sum).wait();
      float k = float(n) * float(n + 1) / 2;
      for (size_t i = 0; i < count; ++i)
        if (out[i] != k * float(i % 13)) { std::printf("rank %d: wrong at %zu: %f\n", r, i, out[i]); return 1; }
      std::vector<int> b(count, r == 1 % n ? 42 : -1);
      comm->broadcast(b.data(), b.data(), count, coll::DataType::i32, 1 % n).wait();
      for (size_t i = 0; i < count; ++i) if (b[i] != 42) { std::printf("rank %d: bcast wrong\n", r); return 1; }
    }
    std::printf("rank %d of %d: ok\n", r, n);
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
