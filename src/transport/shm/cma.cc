#include "transport/shm/cma.h"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "base/log.h"

namespace coll::transport::shm {
namespace {

std::atomic<uint64_t> g_probe_word{0};

}  // namespace

void allowAttach() {
#ifdef PR_SET_PTRACER
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

ProbeTarget probeTarget() {
  uint64_t v = g_probe_word.load();
  if (v == 0) {
    std::random_device rd;
    uint64_t fresh = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;  // never 0
    g_probe_word.compare_exchange_strong(v, fresh);
    v = g_probe_word.load();
  }
  return ProbeTarget{reinterpret_cast<uint64_t>(&g_probe_word), v};
}

Status probe(pid_t pid, const ProbeTarget& target) {
  uint64_t seen = 0;
  iovec l{&seen, sizeof seen};
  iovec r{reinterpret_cast<void*>(target.address), sizeof seen};
  ssize_t n = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
  if (n != static_cast<ssize_t>(sizeof seen))
    return unsupportedError(format("process_vm_readv: %s", n < 0 ? std::strerror(errno) : "short read"));
  if (seen != target.value) return unsupportedError("process_vm_readv read another process (a different PID namespace?)");
  return Status::ok();
}

Config withCmaPolicy(const Config& config, size_t local_ranks) {
  constexpr size_t kHugeCmaThreshold = 256 << 10;
  Config c = config;
  if (!c.shm_cma_auto || local_ranks < 2) return c;
  c.shm_cma_threshold = kHugeCmaThreshold;
  c.shm_cma_huge_only = true;
  COLL_INFO("SHM", "%zu ranks on this host: messages of %zu KiB and more are read with process_vm_readv where "
            "the sender's pages are huge (send buffers in reuse are made so), else they go through the slots "
            "(COLL_SHM_CMA_THRESHOLD=128K reads every one so, 0 none)", local_ranks, kHugeCmaThreshold >> 10);
  return c;
}

Status readFrom(pid_t pid, uint64_t remote, void* local, size_t bytes, size_t* copied, int peer) {
  *copied = 0;
  while (*copied < bytes) {
    iovec l{static_cast<uint8_t*>(local) + *copied, bytes - *copied};
    iovec r{reinterpret_cast<void*>(remote + *copied), bytes - *copied};
    ssize_t n = ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n > 0) {
      *copied += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int err = n < 0 ? errno : EFAULT;
    if (err == ESRCH) return peerLostError(format("peer %d (pid %d, same host) died", peer, static_cast<int>(pid)), peer);
    return transportError(format("process_vm_readv from peer %d (pid %d): %s", peer, static_cast<int>(pid), std::strerror(err)), peer);
  }
  return Status::ok();
}

}  // namespace coll::transport::shm
