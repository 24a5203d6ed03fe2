// The roll call at the start of every communicator: each rank reports its rank and world size
// at the store before anything else, so that launch mistakes are named as such on every rank
// instead of surfacing later as a wrong secret, a missing shared-memory segment or a closed
// store connection:
//   - two processes with one rank (a duplicate RANK, or a second job on the same MASTER_PORT):
//     "rank 1 joined twice at the store at h0:29500: two processes were started as rank 1 (a
//     duplicate RANK, or another job using the same store port)";
//   - ranks that disagree on the world size: "world size disagrees: this rank says 4, rank 0 says 3";
//   - a rank that never starts: "rank 2 never joined: 2 of 3 ranks joined the store at h0:29500
//     within COLL_TIMEOUT (ranks 0, 1)".
// The first rank to see a problem publishes it under the roll's "verdict" key, which every
// rank waits on, so all of them fail with the same words at about the same time.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "bootstrap/store.h"

namespace coll::bootstrap {


struct RollCall {
  int rank = 0;
  int size = 0;
  std::string where;         // which store, for messages: "the store at h0:29500"
  bool hosts_store = false;  // this process serves the store: it must outlive the verdict
  StoreConnect reconnect;
};

// Blocks until every rank of [0, size) has joined with the same size, or fails with
// InvalidArgument (duplicate rank, disagreeing size) or Timeout (missing ranks), naming them.
// prefix is the communicator's key namespace. On a failure, the store's host keeps serving
// until every expected rank has read the verdict (or the deadline has passed), so that late
// starters learn the cause instead of finding the store gone.
Status rollCall(StoreClient& store, const std::string& prefix, const RollCall& call, Deadline deadline);

}  // namespace coll::bootstrap
