#include "elastic_support.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

extern char** environ;

namespace coll::trainer {

std::unique_ptr<Communicator> joinRunningJob(std::chrono::milliseconds timeout) {
  const char* address = std::getenv("COLL_STORE_ADDR");
  if (!address) throw std::runtime_error("--join needs COLL_STORE_ADDR (and COLL_JOB_SECRET): the job's store");
  CommOptions options;
  options.store_address = address;
  if (timeout.count() > 0) options.timeout = timeout;
  return Communicator::join(options);
}

pid_t spawnReplacement(char** argv) {
  std::vector<std::string> args{argv[0], "--join"};
  for (char** a = argv + 1; *a; ++a)
    if (std::strcmp(*a, "--respawn") != 0 && std::strcmp(*a, "--join") != 0) args.push_back(*a);
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = 0;
  if (int rc = ::posix_spawn(&pid, argv[0], nullptr, nullptr, raw.data(), environ); rc != 0) {
    std::printf("elastic: could not start a replacement: %s\n", std::strerror(rc));
    return -1;
  }
  return pid;
}

void reapReplacements(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
}

std::vector<size_t> shuffledOrder(const Dataset& train, unsigned seed) {
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

Batch partOfGlobalBatch(const TrainOptions& o, const Dataset& train, const std::vector<size_t>& order, int64_t step,
                        int replica, int replicas) {
  const size_t global = o.batch, world = static_cast<size_t>(replicas);
  if (global % world != 0)
    throw std::runtime_error("--batch " + std::to_string(global) + " does not split evenly over " +
                             std::to_string(world) + " replicas (pick one divisible by every size the job may have)");
  const size_t rows = global / world, first = static_cast<size_t>(replica) * rows, n = order.size();
  Batch b;
  b.features.resize(rows, train.features.cols);
  b.labels.resize(rows);
  for (size_t i = 0; i < rows; ++i) {
    size_t src = order[(static_cast<size_t>(step) * global + first + i) % n];
    std::memcpy(b.features.row(i), train.features.row(src), train.features.cols * sizeof(float));
    b.labels[i] = train.labels[src];
  }
  return b;
}

}  // namespace coll::trainer
