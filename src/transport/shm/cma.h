// Cross-memory attach: a receiver copies a large message straight out of the sender's address
// space with process_vm_readv, one copy instead of two through the slots.
//
// The kernel allows it when the reader may ptrace the target: same user and, under Yama
// (ptrace_scope 1), only if the target named it a tracer. allowAttach() names any process
// (PR_SET_PTRACER_ANY), which grants nothing a same-user process could not already do without
// Yama. Containers often forbid it outright (seccomp: EPERM or ENOSYS), and ranks in different
// PID namespaces cannot see each other: probe() tells, at init, which peers can be read.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "base/status.h"

namespace coll::transport::shm {

// Lets peers read this process's memory (harmless where Yama is absent).
void allowAttach();

// A word in this process's memory peers read in probe(), and the value it holds.
struct ProbeTarget {
  uint64_t address;
  uint64_t value;
};
ProbeTarget probeTarget();

// Reads the peer's probe word. Ok if it holds the advertised value; otherwise why not
// ("process_vm_readv: Operation not permitted").
Status probe(pid_t pid, const ProbeTarget& target);

// The config a host's shm transport runs with (Config::shm_cma_auto): unless the user set
// COLL_SHM_CMA_THRESHOLD, messages of 256 KiB and more are read by CMA only from huge pages
// (huge_pages.h), and only while the sender's timing of whole ops of that kind finds CMA faster
// than its slots (ShmConnection, kWayRules, TimedChoices).
Config withCmaPolicy(const Config& config, size_t local_ranks);

// Copies `bytes` from `remote` in process `pid` to `local`. Partial progress is reported in
// *copied even on failure. ESRCH (the process is gone) comes back as PeerLost.
Status readFrom(pid_t pid, uint64_t remote, void* local, size_t bytes, size_t* copied, int peer);

}  // namespace coll::transport::shm
