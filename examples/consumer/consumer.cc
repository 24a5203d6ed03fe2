// Uses coll through its installed public headers and libcoll.so only: every rank all-reduces
// rank-dependent floats and checks the sum against the closed formula.
#include <coll/communicator.h>
#include <coll/version.h>

#include <cstdio>
#include <vector>

int main() {
  try {
    auto comm = coll::Communicator::fromEnvironment();
    const int n = comm->size(), r = comm->rank();
    const size_t count = 1000003;  // prime: no chunking lines up with it
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = float(r + 1) * float(i % 7);
    comm->allreduce(data.data(), data.data(), count, coll::DataType::f32, coll::ReduceOp::sum).wait();
    const float ranks_sum = float(n) * float(n + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != ranks_sum * float(i % 7)) {
        std::fprintf(stderr, "consumer rank %d: element %zu is %g, expected %g\n", r, i, data[i], ranks_sum * float(i % 7));
        return 1;
      }
    }
    std::printf("consumer (C++, coll %s) rank %d of %d: all-reduce ok\n", COLL_VERSION_STRING, r, n);
    return 0;
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
