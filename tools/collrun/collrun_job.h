// Running a collrun job: start every rank, forward their output and collrun's signals, wait
// for them, and decide when to give up on the survivors.
//
// The failure policy follows mpirun. When a rank exits non-zero or dies by a signal, collrun
// says so on stderr and waits --kill-after seconds before terminating the rest: long enough
// for the survivors to notice the lost peer and report it themselves (coll reports PeerLost),
// short enough that a survivor stuck in a collective cannot hang the job. Terminating means
// SIGTERM to each remaining rank's process group, then SIGKILL 3 s later. --timeout applies
// the same termination to the whole job once its wall-clock limit passes.
#pragma once

#include <vector>

#include "collrun_spawn.h"

namespace coll::collrun {

struct JobOptions {
  double kill_after_s = 10;  // grace period after the first failed rank; 0 = never terminate
  double timeout_s = 0;      // whole-job wall-clock limit; 0 = none
};

// Runs the job on the calling thread until every rank has exited. SIGINT, SIGTERM and SIGHUP
// sent to collrun are forwarded to every rank; a second one sends SIGKILL instead. Installs
// handlers for those signals and SIGCHLD, and ignores SIGPIPE. Returns collrun's exit status:
// the worst rank's (an exit status, or 128 + the killing signal), at least 124 when --timeout
// expired, and at least 1 when a rank could not be started.
int runJob(const std::vector<SpawnSpec>& specs, const JobOptions& options);

}  // namespace coll::collrun
