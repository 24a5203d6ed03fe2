// Starting one rank's process for collrun, and naming how it ended.
//
// collrun runs the rendezvous store on a background thread, so after fork() the child may only
// make async-signal-safe calls: everything exec needs (argv, envp, pipes) is prepared before
// the fork, and the child just rewires file descriptors and execs.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace coll::collrun {

struct SpawnSpec {
  int rank = 0;
  std::vector<std::string> argv;  // argv[0] is searched in PATH, like execvp
  std::vector<std::string> env;   // the child's complete environment, "NAME=value" each
  bool capture_output = true;     // stdout/stderr through pipes to collrun; else inherited
  bool inherit_stdin = false;     // else /dev/null
  int cpu = -1;                   // pinned to this CPU; -1: collrun's affinity
  int lifeline_fd = -1;           // kept open in the child across exec (COLL_LAUNCHER_FD)
};

struct RankProcess {
  int rank = -1;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;           // from waitpid, once !running
  bool terminated_by_us = false; // collrun's kill policy sent it SIGTERM/SIGKILL
  int out_fd = -1;               // read ends of its stdout/stderr pipes; -1 once closed or
  int err_fd = -1;               // when output is inherited
};

// Opens /dev/null on any of fds 0-2 that is closed, so pipes created later never land there
// and get clobbered by the child's dup2 onto its standard streams. Call first thing in main.
void ensureStandardFdsOpen();

// Records the descriptors collrun inherited, which ranks inherit in turn (a jobserver's, say).
// Ranks get no others: the store's sockets, its connections to other ranks and the other
// ranks' pipes stay in collrun even where they lack FD_CLOEXEC, so that a rank's exit or a
// closed store connection is seen as such. Call before starting the store.
void recordInheritedFds();

// Two pipe ends per rank outgrow the usual soft limit of 1024 descriptors: raises the soft
// limit towards the hard one. Children get the original limit back.
void raiseFdLimit(int needed);

// Forks and execs one rank in its own process group, so that collrun can signal the rank's
// whole process tree and a terminal's Ctrl-C reaches collrun alone (which forwards it).
// The child starts with default signal dispositions and collrun's signal mask, and dies by
// SIGKILL when collrun does (PR_SET_PDEATHSIG, checked against collrun having died before it
// was set: a rank never outlives collrun, even one killed with SIGKILL). If exec fails,
// the child writes "collrun: cannot execute 'prog': <reason>" to its stderr and exits 127.
Status spawnRank(const SpawnSpec& spec, RankProcess* out);

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describeExit(int wait_status);
// The status a shell would report: the exit status, or 128 + the signal.
int exitCodeOf(int wait_status);

}  // namespace coll::collrun
