// What a long-running rank holds from the kernel: resident memory, open descriptors, threads.
//
// The soak run samples these after its warm-up and again at the end; growth means a leak
// (buffers, connections, progress threads or timers that are never given back).
// Linux only: everything is read from /proc/self.
#pragma once

#include <cstdint>
#include <string>

namespace coll::soak {

struct ProcessResources {
  int64_t rss_bytes = 0;  // resident set (statm's second field), shared pages included
  int open_fds = 0;       // entries of /proc/self/fd, less the one the count itself opens
  int threads = 0;        // entries of /proc/self/task
  // Of those, coll's process-wide threads, started once and kept for the life of the process
  // by design (named "coll-lifeline", "coll-hugepages"): not a communicator's leftovers.
  int process_wide_threads = 0;
  // coll's shared-memory segments this process maps whose names are still in /dev/shm: what
  // killing the job now would leave behind (a connected communicator has unlinked them all).
  int linked_segments = 0;

  std::string describe() const;  // "rss 23.4 MiB, 17 fds, 3 threads, 0 linked segments"
  int ownThreads() const { return threads - process_wide_threads; }
};

ProcessResources sampleProcessResources();
int countProcessWideThreads();

}  // namespace coll::soak
