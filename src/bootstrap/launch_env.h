// What a launcher tells each rank, and the environment variables collrun sets to say it.
#pragma once

#include <string>

#include "base/status.h"

namespace coll::bootstrap {

// Set by collrun for every rank it starts.
inline constexpr const char* kEnvRank = "COLL_RANK";
inline constexpr const char* kEnvWorldSize = "COLL_WORLD_SIZE";
inline constexpr const char* kEnvLocalRank = "COLL_LOCAL_RANK";
inline constexpr const char* kEnvLocalSize = "COLL_LOCAL_SIZE";
inline constexpr const char* kEnvStoreAddr = "COLL_STORE_ADDR";  // host:port served by collrun
inline constexpr const char* kEnvJobSecret = "COLL_JOB_SECRET";
inline constexpr const char* kEnvLauncherFd = "COLL_LAUNCHER_FD";  // collrun's lifeline (comm/launcher_lifeline.h)

struct LaunchInfo {
  std::string launcher;      // "collrun", "torchrun", "openmpi", "mpich", "slurm", "env"
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  std::string store_address; // host:port
  bool host_store = false;   // this rank must serve the store (rank 0 without collrun)
  int store_port_tries = 1;  // > 1: the port was derived and may be taken (store_port_range.h)
  std::string secret;        // may be derived; see secret_origin
  std::string secret_origin; // "COLL_JOB_SECRET", "collrun", or "derived from <ids>"
  std::string rendezvous_file; // rank 0 removes it once every rank has joined
};

// Reads the launcher's environment. Fails with InvalidArgument naming what is missing.
Status detectLaunch(LaunchInfo* info);

}  // namespace coll::bootstrap
