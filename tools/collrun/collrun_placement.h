// Where collrun's ranks run. "--bind-to auto" (the default) pins rank r to the CPU r mod n of
// the n collrun may use when those CPUs are idle, as mpirun binds by default where the ranks
// fit, and says so on stderr; otherwise it leaves placement to the kernel. "core" always pins,
// "none" never does.
//
// Why: unpinned, the scheduler now and then puts two busy ranks on one core while another
// idles: on a 2-core VM a 2-rank 8-byte all-reduce took 0.5-1.0 us in some runs and 9-13 us
// in others, pinned 0.6-0.75 us in every run. Where the ranks outnumber the CPUs too (mpirun
// does not bind there): 8-byte all-reduce, 10 runs each, 4 ranks on 2 cores 2.8-7.6 us
// unpinned, 1.9-2.3 pinned (Open MPI 2.3-4.2); 8 ranks 14.3-17.1 against 5.7-7.7 (Open MPI
// 10.1-21.3); 64 MiB all-reduce, all-gather and broadcast within the runs' noise of each other.
// Why not always: on a machine busy with other processes a pinned rank cannot get away from
// them (with two busy loops running, a 2-rank 64 MiB all-reduce reached 0.2 GB/s pinned
// against 1.9 unpinned), so auto looks first.
#pragma once

#include <string>
#include <vector>

namespace coll::collrun {

struct Placement {
  std::vector<int> cpu_of_rank;  // -1: not pinned
  std::string note;              // one line for stderr; empty: nothing to say
};

// bind_to: "auto", "core" or "none" (already validated).
Placement choosePlacement(const std::string& bind_to, int np);

// The CPUs this process may run on, ascending.
std::vector<int> allowedCpus();

// How many of `cpus` other processes kept busy over `window_ms` (from /proc/stat), e.g. 1.6.
double busyCpus(const std::vector<int>& cpus, int window_ms);

}  // namespace coll::collrun
