// The PMIx client's stand-in for builds without libpmix-dev (pmix_exchange.h): launch_env.cc
// then takes its older paths (MASTER_ADDR, Open MPI's file on one host, Slurm's node list).
#include "bootstrap/pmix_exchange.h"

namespace coll::bootstrap {

bool pmixBuilt() { return false; }

Status pmixExchange(const std::string& launcher, const std::string& key, const std::string&, Deadline, PmixJob*,
                    std::string*) {
  return unsupportedError(launcher + ": this coll was built without PMIx (apt-get install libpmix-dev and "
                          "reconfigure), so it cannot read " + key + " from the launcher's PMIx server");
}

}  // namespace coll::bootstrap
