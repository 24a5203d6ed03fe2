// A rendezvous store whose port coll derived rather than the user chose (torchrun's MASTER_PORT
// + 1, a Slurm job's hash) may find that port taken: a launcher that found its own port free by
// bind(0) leaves the next one in the ephemeral range, where any outgoing connection can hold
// it. So rank 0 serves on the first free port of a short range and the others try the range in
// turn; only a store that greets as coll's and accepts the job secret ends the search.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/store.h"

namespace coll::bootstrap {

// How many ports, from the derived one up, rank 0 may fall back to.
inline constexpr int kDerivedStorePortTries = 16;

// Serves the store on the first of first_port .. first_port + tries - 1 that it can bind.
// Fails naming the range and the first port's error when none is free.
Status serveOnFirstFreePort(const std::string& bind_host, int first_port, int tries, const std::string& secret,
                            std::unique_ptr<StoreServer>* out);

// Connects to the job's store somewhere in address's port .. port + tries - 1, retrying until
// the deadline (rank 0 may start later). *found: the address that answered. tries 1 is
// StoreClient::connect. A listener that is not coll's, or another job's store, is passed over.
Status connectInPortRange(const std::string& address, int tries, const std::string& secret, Deadline deadline,
                          std::unique_ptr<StoreClient>* out, std::string* found);

}  // namespace coll::bootstrap
