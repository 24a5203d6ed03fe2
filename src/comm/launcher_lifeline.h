// A rank never outlives its launcher. collrun hands every rank the read end of a pipe whose
// write end only collrun holds (COLL_LAUNCHER_FD); the descriptor survives exec, so a rank
// started through a wrapper (bash -c, python -m) still has it. When collrun dies, by a signal
// it cannot catch included, the pipe hangs up, and a thread that sleeps in poll() on it ends
// this process with SIGKILL after one line on stderr. collrun also sets PR_SET_PDEATHSIG on
// the processes it forks, which covers programs that never create a communicator.
#pragma once

namespace coll {

// Starts the watcher once per process (later calls, and fd < 0, do nothing). A descriptor that
// is not a pipe is ignored with a warning: the variable was inherited from somewhere else.
void watchLauncher(int fd);

}  // namespace coll
