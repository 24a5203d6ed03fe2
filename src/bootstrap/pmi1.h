// A client of the PMI-1 wire protocol that MPICH's Hydra (mpiexec/mpirun.mpich) serves to each
// rank over the inherited descriptor PMI_FD: text commands "cmd=put kvsname=K key=k value=v"
// answered line by line. coll uses it only to publish the store's address from rank 0.
#pragma once

#include <string>

#include "base/fd_io.h"

namespace coll::bootstrap {

class Pmi1Client {
 public:
  // Performs cmd=init and learns the key-value space name.
  static Status connect(int fd, Deadline deadline, Pmi1Client* out);

  Status put(const std::string& key, const std::string& value, Deadline deadline);
  Status get(const std::string& key, std::string* value, Deadline deadline);
  // Collective: every rank of the job must call it.
  Status barrier(Deadline deadline);
  // Ends this process's PMI session. Hydra takes a PMI connection that closes without it for
  // a crashed rank and kills every other rank of the job.
  Status finalize(Deadline deadline);

 private:
  Status command(const std::string& line, const std::string& expect_cmd, std::string* reply, Deadline deadline);
  int fd_ = -1;
  std::string kvsname_;
  std::string buffered_;
};

// The value of `field` in a PMI reply line ("cmd=get_result rc=0 value=abc" -> "abc").
std::string pmiField(const std::string& line, const std::string& field);

}  // namespace coll::bootstrap
