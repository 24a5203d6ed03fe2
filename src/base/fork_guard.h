// Detects use of a communicator from a forked child. A child inherits the parent's memory,
// sockets and shared-memory rings but not its progress thread: an op issued there would never
// run, and one that did would interleave bytes with the parent's on the same connections.
// Costs one relaxed atomic load per call (no getpid() syscall on the fast path).
#pragma once

#include <cstdint>
#include <sys/types.h>

namespace coll {

// How many fork()s separate this process from the first caller's: 0 in the process that first
// asked, 1 in its child, and so on. The first call installs a pthread_atfork handler.
uint64_t forkGeneration();

// The pid of the process that made the communicator, for the message.
struct ForkStamp {
  uint64_t generation = 0;
  pid_t pid = 0;
  static ForkStamp now();
  bool inForkedChild() const { return forkGeneration() != generation; }
};

}  // namespace coll
