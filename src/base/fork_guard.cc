#include "base/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace coll {
namespace {

std::atomic<uint64_t> g_generation{0};

void inChild() { g_generation.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

uint64_t forkGeneration() {
  static const bool installed = ::pthread_atfork(nullptr, nullptr, inChild) == 0;
  (void)installed;
  return g_generation.load(std::memory_order_relaxed);
}

ForkStamp ForkStamp::now() { return {forkGeneration(), ::getpid()}; }

}  // namespace coll
