// One rank of the link-down fault (link_down.sh): all-reduces until an op fails, then reports
// when (CLOCK_REALTIME, comparable with the script's `date` across network namespaces) and
// how, destroys its communicator and reports the descriptors and threads it held before and
// after. Rank, size and rendezvous come from the environment (RANK, WORLD_SIZE, MASTER_ADDR).
//
//   link_down_rank [--seconds S]     exit 0: an op failed with a coll::Error within S seconds
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "coll/communicator.h"
#include "fault/process_counts.h"

namespace {

double realtimeSeconds() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) + ts.tv_nsec / 1e9;
}

int runUntilFailure(coll::Communicator& comm, double limit_seconds) {
  std::vector<float> buf(64 << 10, 1.0f);  // 256 KiB
  auto start = std::chrono::steady_clock::now();
  for (long ops = 0;; ++ops) {
    if (ops == 3) std::printf("rank %d: running\n", comm.rank()), std::fflush(stdout);
    try {
      comm.allreduce(buf.data(), buf.data(), buf.size(), coll::DataType::f32, coll::ReduceOp::sum).wait();
    } catch (const coll::Error& e) {
      std::printf("rank %d: failed at %.3f after %ld ops (%s): %s\n", comm.rank(), realtimeSeconds(), ops,
                  coll::toString(e.code()), e.what());
      return 0;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit_seconds) {
      std::printf("rank %d: no op failed within %.0f s\n", comm.rank(), limit_seconds);
      return 1;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double limit = 60;
  if (argc == 3 && !std::strcmp(argv[1], "--seconds")) limit = std::strtod(argv[2], nullptr);
  int fds_before = coll::test::countOpenFds(), threads_before = coll::test::countThreads();
  int rc = 1;
  try {
    auto comm = coll::Communicator::fromEnvironment();
    rc = runUntilFailure(*comm, limit);
    auto destroy_start = std::chrono::steady_clock::now();
    int rank = comm->rank();
    comm.reset();
    std::printf("rank %d: destroyed in %.3f s; fds %d -> %d, threads %d -> %d\n", rank,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - destroy_start).count(), fds_before,
                coll::test::countOpenFds(), threads_before, coll::test::settledThreadCount(threads_before));
  } catch (const coll::Error& e) {
    std::printf("init failed (%s): %s\n", coll::toString(e.code()), e.what());
  }
  return rc;
}
