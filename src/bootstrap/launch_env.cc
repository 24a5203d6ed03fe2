// Reads rank, size and the rendezvous from whichever launcher started us. Order: collrun,
// torchrun / explicit MASTER_ADDR, MPICH (PMI-1), Open MPI, Slurm, any other PMIx launcher.
// Open MPI and Slurm (srun --mpi=pmix) exchange the store's address through PMIx when this
// build has it (pmix_exchange.h) and the launcher started a PMIx server beside the rank.
#include "bootstrap/launch_env.h"

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "bootstrap/auth.h"
#include "bootstrap/hosted_store.h"
#include "bootstrap/pmi1.h"
#include "bootstrap/pmix_exchange.h"
#include "bootstrap/slurm_hostlist.h"
#include "bootstrap/store_port_range.h"
#include "base/config.h"
#include "base/log.h"

namespace coll::bootstrap {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

bool envInt(const char* name, int* out) {
  const char* v = env(name);
  if (!v) return false;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0') return false;
  *out = static_cast<int>(x);
  return true;
}

Deadline initDeadline() { return Clock::now() + Config::global().timeout; }

// Without COLL_JOB_SECRET, launchers other than collrun give us nothing secret. A secret
// derived from the job's identity still keeps two jobs from cross-talking; it does not stop
// an attacker on the network, which the log says once.
void takeSecret(LaunchInfo* info, const std::string& job_identity) {
  if (const char* s = env(kEnvJobSecret)) {
    info->secret = s;
    info->secret_origin = kEnvJobSecret;
    return;
  }
  info->secret = "derived:" + job_identity;
  info->secret_origin = "derived from " + job_identity;
  COLL_INFO("INIT", "no COLL_JOB_SECRET: connections are authenticated with a secret derived from the job's "
            "identity (%s); set COLL_JOB_SECRET on every rank to keep out others on the network", job_identity.c_str());
}

Status fromCollrun(LaunchInfo* info) {
  info->launcher = "collrun";
  envInt(kEnvRank, &info->rank);
  envInt(kEnvWorldSize, &info->size);
  envInt(kEnvLocalRank, &info->local_rank);
  info->store_address = env(kEnvStoreAddr);
  if (!env(kEnvJobSecret)) return invalidArgument("COLL_STORE_ADDR is set but COLL_JOB_SECRET is not");
  info->secret = env(kEnvJobSecret);
  info->secret_origin = "collrun";
  return Status::ok();
}

// torchrun, or any launcher the user points at a rendezvous with MASTER_ADDR/MASTER_PORT.
Status fromMasterAddr(LaunchInfo* info, const char* launcher) {
  info->launcher = launcher;
  int port = 0;
  if (!envInt("MASTER_PORT", &port) || port <= 0 || port > 65535) return invalidArgument("MASTER_PORT is not a port number");
  // Under torchrun the agent's own TCPStore already holds MASTER_PORT; ours listens next to it.
  // Either way torchrun's port is one it found free and let go (c10d), or its neighbour: taken
  // by the time rank 0 binds it, now and then, so the next ones are tried too.
  std::string agent = env("TORCHELASTIC_USE_AGENT_STORE") ? env("TORCHELASTIC_USE_AGENT_STORE") : "";
  int store_port = port;
  if (!envInt("COLL_STORE_PORT", &store_port)) {
    if (agent == "True" || agent == "1") store_port = port + 1;
    if (std::string(launcher) == "torchrun") {
      store_port = std::min(store_port, 65536 - kDerivedStorePortTries);
      info->store_port_tries = kDerivedStorePortTries;
    }
  }
  info->store_address = std::string(env("MASTER_ADDR")) + ":" + std::to_string(store_port);
  info->host_store = info->rank == 0;
  // Not the world size: ranks that disagree on it must meet at the store to be told so.
  std::string identity = info->store_address;
  if (const char* run = env("TORCHELASTIC_RUN_ID")) identity += "/" + std::string(run);
  takeSecret(info, identity);
  return Status::ok();
}

Status fromPmi1(LaunchInfo* info) {
  info->launcher = "mpich";
  envInt("PMI_RANK", &info->rank);
  envInt("PMI_SIZE", &info->size);
  envInt("MPI_LOCALRANKID", &info->local_rank);
  int fd = -1;
  if (!envInt("PMI_FD", &fd)) return invalidArgument("PMI_RANK is set but PMI_FD is not (only PMI-1 over PMI_FD is supported)");
  Deadline deadline = initDeadline();
  Pmi1Client pmi;
  COLL_RETURN_IF_ERROR(Pmi1Client::connect(fd, deadline, &pmi));
  int local_size = 0;
  bool local_only = envInt("MPI_LOCALNRANKS", &local_size) && local_size == info->size;
  if (info->rank == 0) {
    info->secret = env(kEnvJobSecret) ? env(kEnvJobSecret) : generateSecret();
    COLL_RETURN_IF_ERROR(startHostedStore(info->secret, local_only, &info->store_address));
    COLL_RETURN_IF_ERROR(pmi.put("coll-store", info->store_address + "," + info->secret, deadline));
  }
  COLL_RETURN_IF_ERROR(pmi.barrier(deadline));
  std::string value;
  COLL_RETURN_IF_ERROR(pmi.get("coll-store", &value, deadline));
  size_t comma = value.find(',');
  if (comma == std::string::npos) return transportError("malformed coll-store entry in PMI: " + value);
  info->store_address = value.substr(0, comma);
  info->secret = value.substr(comma + 1);
  info->secret_origin = "rank 0, via PMI";
  COLL_RETURN_IF_ERROR(pmi.finalize(deadline));  // coll needs PMI no more; see Pmi1Client::finalize
  return Status::ok();
}

// A PMIx server stands behind this process: every PMIx server sets these for its clients.
bool pmixEnvironment() { return env("PMIX_NAMESPACE") && env("PMIX_RANK"); }

// Rank 0 starts the store (on 127.0.0.1 when the launcher says every rank is on its host) and
// publishes "address,secret" through the launcher's PMIx server; every rank reads it back.
Status fromPmix(LaunchInfo* info, bool all_local) {
  Deadline deadline = initDeadline();
  std::string published;
  if (info->rank == 0) {
    info->secret = env(kEnvJobSecret) ? env(kEnvJobSecret) : generateSecret();
    COLL_RETURN_IF_ERROR(startHostedStore(info->secret, all_local, &info->store_address));
    published = info->store_address + "," + info->secret;
  }
  PmixJob job;
  std::string value;
  COLL_RETURN_IF_ERROR(pmixExchange(info->launcher, "coll.store", published, deadline, &job, &value));
  if (job.rank != info->rank)
    return invalidArgument(format("%s: the launcher's variables say rank %d but its PMIx server says rank %d of "
                                  "namespace %s (PMIX_RANK=%s): they must agree", info->launcher.c_str(), info->rank,
                                  job.rank, job.nspace.c_str(), env("PMIX_RANK")));
  if (info->size < 0) info->size = job.size;
  if (info->local_rank < 0) info->local_rank = job.local_rank;
  size_t comma = value.find(',');
  if (comma == std::string::npos)
    return transportError(info->launcher + ": malformed coll.store entry from rank 0 through PMIx: " + value);
  info->store_address = value.substr(0, comma);
  info->secret = value.substr(comma + 1);
  info->secret_origin = "rank 0, via PMIx";
  return Status::ok();
}

// Any other launcher with a PMIx server (prterun, Open MPI 5's mpirun): PMIX_RANK is the rank.
Status fromPmixOnly(LaunchInfo* info) {
  info->launcher = "pmix";
  if (!envInt("PMIX_RANK", &info->rank))
    return invalidArgument(format("pmix: PMIX_RANK=%s is not a rank number", env("PMIX_RANK")));
  if (!pmixBuilt())
    return invalidArgument("pmix: PMIX_NAMESPACE and PMIX_RANK are set, but this coll was built without PMIx "
                           "(apt-get install libpmix-dev and reconfigure), or set RANK, WORLD_SIZE, MASTER_ADDR and "
                           "MASTER_PORT");
  return fromPmix(info, false);
}

// Open MPI without MASTER_ADDR or PMIx: on one host, rank 0 publishes the store in a file only
// this user can read, named after the job. Across hosts the user must give MASTER_ADDR/PORT.
Status fromOpenMpiFile(LaunchInfo* info) {
  int local_size = 0;
  envInt("OMPI_COMM_WORLD_LOCAL_SIZE", &local_size);
  const char* job = env("OMPI_MCA_ess_base_jobid") ? env("OMPI_MCA_ess_base_jobid") : env("PMIX_NAMESPACE");
  if (local_size != info->size || !job)
    return invalidArgument(std::string("openmpi: ranks on several hosts (OMPI_COMM_WORLD_LOCAL_SIZE < "
                           "OMPI_COMM_WORLD_SIZE) need the launcher's PMIx server, but ") +
                           (pmixBuilt() ? "PMIX_NAMESPACE or PMIX_RANK is not set"
                                        : "this coll was built without PMIx (apt-get install libpmix-dev)") +
                           "; or set MASTER_ADDR and MASTER_PORT, e.g. mpirun -x MASTER_ADDR=<rank 0's host> "
                           "-x MASTER_PORT=29500");
  std::string path = std::string("/tmp/coll-ompi-") + std::to_string(::getuid()) + "-" + job;
  for (char& c : path) if (c == ' ' || c == '@' || c == ',') c = '_';
  Deadline deadline = initDeadline();
  if (info->rank == 0) {
    info->secret = env(kEnvJobSecret) ? env(kEnvJobSecret) : generateSecret();
    COLL_RETURN_IF_ERROR(startHostedStore(info->secret, true, &info->store_address));
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return transportError("cannot write " + tmp);
    std::string line = info->store_address + " " + info->secret + "\n";
    bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return transportError("cannot publish " + path);
  } else {
    for (;;) {
      std::ifstream in(path);
      if (in >> info->store_address >> info->secret) break;
      if (Clock::now() > deadline) return timeoutError("rank 0 did not publish " + path + " before the deadline");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  info->secret_origin = "rank 0, via " + path;
  if (info->rank == 0) info->rendezvous_file = path;
  return Status::ok();
}

Status fromOpenMpi(LaunchInfo* info) {
  info->launcher = "openmpi";
  envInt("OMPI_COMM_WORLD_RANK", &info->rank);
  envInt("OMPI_COMM_WORLD_SIZE", &info->size);
  envInt("OMPI_COMM_WORLD_LOCAL_RANK", &info->local_rank);
  if (env("MASTER_ADDR")) return fromMasterAddr(info, "openmpi");
  int local_size = 0;
  envInt("OMPI_COMM_WORLD_LOCAL_SIZE", &local_size);
  if (pmixBuilt() && pmixEnvironment()) return fromPmix(info, local_size == info->size);
  return fromOpenMpiFile(info);
}

// The first port of SLURM_STEP_RESV_PORTS ("30001-30002" or "30001,30004").
bool firstReservedPort(int* port) {
  const char* v = env("SLURM_STEP_RESV_PORTS");
  if (!v) return false;
  char* end = nullptr;
  long p = std::strtol(v, &end, 10);
  if (end == v || p <= 0 || p > 65535) return false;
  *port = static_cast<int>(p);
  return true;
}

Status fromSlurm(LaunchInfo* info) {
  info->launcher = "slurm";
  envInt("SLURM_PROCID", &info->rank);
  envInt("SLURM_NTASKS", &info->size);
  envInt("SLURM_LOCALID", &info->local_rank);
  if (env("MASTER_ADDR")) return fromMasterAddr(info, "slurm");
  int nodes_in_step = 0;
  envInt("SLURM_STEP_NUM_NODES", &nodes_in_step);
  if (pmixBuilt() && pmixEnvironment()) return fromPmix(info, nodes_in_step == 1);  // srun --mpi=pmix
  const char* nodes = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
  if (!nodes) return invalidArgument("Slurm: no SLURM_STEP_NODELIST or SLURM_JOB_NODELIST, and no MASTER_ADDR");
  std::string first;
  COLL_RETURN_IF_ERROR(firstHostOfList(nodes, &first));
  int job = 0;
  envInt("SLURM_JOB_ID", &job);
  // MASTER_PORT; else the step's first reserved port (MpiParams=ports=..., the same on every node
  // of the step, and no other step's); else one derived from the job id, the same on every rank.
  int port = 0;
  if (!envInt("MASTER_PORT", &port) && !firstReservedPort(&port)) {
    port = 20000 + job % 20000;
    info->store_port_tries = kDerivedStorePortTries;
  }
  info->store_address = first + ":" + std::to_string(port);
  info->host_store = info->rank == 0;
  takeSecret(info, "slurm/" + std::to_string(job) + "/" + (env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : "0"));
  return Status::ok();
}

Status checkPosition(const LaunchInfo& info) {
  if (info.size < 1 || info.rank < 0 || info.rank >= info.size)
    return invalidArgument(format("launcher %s gave rank %d of %d, which is not a valid position: ranks run from 0 "
                                  "to the world size - 1", info.launcher.c_str(), info.rank, info.size));
  if (info.store_address.empty()) return invalidArgument("no rendezvous address");
  return Status::ok();
}

}  // namespace

Status detectLaunch(LaunchInfo* info) {
  Status st;
  if (env(kEnvStoreAddr)) {
    st = fromCollrun(info);
  } else if (env("RANK") && env("WORLD_SIZE") && env("MASTER_ADDR")) {
    envInt("RANK", &info->rank);
    envInt("WORLD_SIZE", &info->size);
    envInt("LOCAL_RANK", &info->local_rank);
    st = fromMasterAddr(info, env("TORCHELASTIC_RUN_ID") ? "torchrun" : "env");
  } else if (env("PMI_RANK") && env("PMI_SIZE")) {
    st = fromPmi1(info);
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    st = fromOpenMpi(info);
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    st = fromSlurm(info);
  } else if (pmixEnvironment()) {
    st = fromPmixOnly(info);
  } else {
    return invalidArgument("no launcher found: start with collrun -n N, torchrun, mpirun or srun, or set RANK, "
                           "WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
  }
  COLL_RETURN_IF_ERROR(st);
  return checkPosition(*info);
}

}  // namespace coll::bootstrap
