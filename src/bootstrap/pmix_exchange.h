// A PMIx client for the one thing coll needs from a launcher that runs a PMIx server beside
// every rank (Open MPI 4.x's orted, Slurm's srun --mpi=pmix, PRRTE): rank 0's rendezvous
// address, so no one has to set MASTER_ADDR by hand across hosts.
//
// Built when libpmix-dev is found at configure time (COLL_HAVE_PMIX); otherwise pmixBuilt()
// is false and pmixExchange() answers Unsupported, and launch_env.cc falls back to its older
// paths. Called from the bootstrap only, from one thread at a time.
#pragma once

#include <string>

#include "base/fd_io.h"

namespace coll::bootstrap {

// Whether this build carries the PMIx client.
bool pmixBuilt();

// What the PMIx server told this process.
struct PmixJob {
  std::string nspace;   // the job's namespace
  int rank = -1;        // in the namespace
  int size = -1;        // PMIX_JOB_SIZE
  int local_rank = -1;  // PMIX_LOCAL_RANK, -1 when the server does not say
};

// Collective over every process of the namespace: PMIx_Init; the process of rank 0 puts
// `rank0_value` under `key` (PMIx_Put, global scope) and commits; all fence (collecting the
// data); every process reads rank 0's value into *value; PMIx_Finalize.
//
// `launcher` names the launcher in every error ("openmpi", "slurm", "pmix"). Every step is
// bounded by `deadline`: the fence and the get carry PMIX_TIMEOUT, and the whole exchange runs on
// a helper thread that this call stops waiting for at the deadline, since PMIx_Init has no
// timeout of its own. A timeout names the step and the variables that pointed at the server.
Status pmixExchange(const std::string& launcher, const std::string& key, const std::string& rank0_value,
                    Deadline deadline, PmixJob* job, std::string* value);

}  // namespace coll::bootstrap
