// How coll-sim moves one message's bytes: a path of links, each a first-come-first-served
// server of whole messages at its capacity, crossed cut-through (a message starts on a link
// once it started on the one before and the link is free, and cannot finish before it finished
// there).
//
// Why not max-min fair sharing: a fair share changes every time a flow starts or ends, and at
// 16,384 ranks tens of thousands of flows share the spine, which makes each event cost as
// much as the flows on its links. coll's algorithms cut large transfers into slices (at most
// COLL_SLICE_BYTES per message), so competing flows on a FIFO link interleave slice by slice,
// which is an equal share at the grain of a slice; the total a link carries per second, which
// bounds bandwidth-bound collectives, is the same under either rule. Messages are booked on
// their links when their send is posted, in simulated-time order.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster_model.h"

namespace coll::sim {

class Network {
 public:
  // period: the ranks simulated (symmetry.h); a message to rank p uses the links of p's image
  // p mod period, and crosses hosts and leaves as the real ranks do. m.topo.nranks: exact.
  Network(const ClusterModel& m, int period);

  // A message of `bytes` from rank `src` to rank `dst` whose send is posted at `start`: when its
  // sender is done (the rest fits in the socket's send buffer, Fabric::send_buffer_bytes) and
  // when its last byte has crossed every link of its path (its arrival adds the link class's
  // α); both `start` inside a host, where the receiver does the copy (receiveWork).
  struct Sent {
    double sender_done, last_byte;
  };
  Sent transfer(int src, int dst, double start, double bytes);
  // A receive from `from` whose message is there and whose deps are done at `start`: what the
  // receiver's progress thread does with it (read it from the socket and reduce it; copy or
  // reduce it out of the ring inside a host); returns when it is done.
  double receiveWork(int rank, int from, double start, double bytes, bool reduces);
  // The seconds a rank's progress thread is busy from `start` (reductions, local copies);
  // returns when it is done.
  double compute(int rank, double start, double seconds);
  // A copy of `bytes` by a rank inside its host (a sender's into the shared-memory ring) at
  // intra β, in the host's memory bandwidth where one is given; returns when it is done.
  double copyInHost(int rank, double start, double bytes);
  // The α a message from src to dst pays on top of its transfer.
  double alpha(int src, int dst) const;
  bool sameHost(int a, int b) const { return m_.host_of[static_cast<size_t>(a)] == m_.host_of[static_cast<size_t>(b)]; }

 private:
  // A FIFO server at Bps; with a burst, a token bucket as tc's tbf shapes a link: a message
  // that finds enough tokens passes at the unshaped peak rate, the rest of it waits for them.
  struct Link {
    double free_at = 0;
    double Bps = 0;
    double burst = 0;        // bytes; 0: no bucket
    double tokens = 0;       // as of tokens_at
    double tokens_at = 0;
    // Seconds to send `bytes` starting at `begin` (>= free_at); takes tokens.
    double sendTime(double begin, double bytes, double peak_Bps);
  };
  int nic(int rank) const;
  double inHostMemory(int rank, double start, double bytes, double end);  // end, or later
  double peak_Bps_;                      // what a shaped link passes a burst at (intra β)

  const ClusterModel& m_;
  int period_;
  int period_leaves_;                    // leaves among the simulated ranks
  std::vector<Link> nic_out_, nic_in_;   // per host and NIC
  std::vector<Link> leaf_up_, leaf_down_;
  std::vector<Link> host_memory_;
  std::vector<double> worker_free_;      // per rank
  double latency_intra_, latency_inter_;  // ClusterModel::latencySeconds, once: alpha() is per message
};

}  // namespace coll::sim
