#include "sim_network.h"

#include <algorithm>

namespace coll::sim {

double Network::Link::sendTime(double begin, double bytes, double peak_Bps) {
  if (burst <= 0) return bytes / Bps;
  tokens = std::min(burst, tokens + (begin - tokens_at) * Bps);
  double seconds = 0;
  if (bytes <= tokens) {
    seconds = bytes / peak_Bps;
    tokens -= bytes;
  } else {
    seconds = std::max(bytes / peak_Bps, (bytes - tokens) / Bps);
    tokens = 0;
  }
  tokens_at = begin + seconds;
  return seconds;
}

Network::Network(const ClusterModel& m, int period) : peak_Bps_(m.topo.intra.beta_Bps), m_(m), period_(period) {
  const size_t hosts = static_cast<size_t>(m.numHosts());
  const size_t nics = hosts * static_cast<size_t>(m.fabric.nics_per_host);
  const double burst = m.fabric.burst_bytes;
  nic_out_.assign(nics, Link{0, m.topo.inter.beta_Bps, burst, burst, 0});
  nic_in_ = nic_out_;
  const bool spine = m.numLeaves() > 1;
  leaf_up_.assign(spine ? static_cast<size_t>(m.numLeaves()) : 0, Link{0, m.leafUplinkBps(), 0, 0, 0});
  const int per_leaf = m.topo.maxRanksPerHost() * std::max(1, m.fabric.hosts_per_leaf);
  period_leaves_ = spine ? std::max(1, (period + per_leaf - 1) / per_leaf) : 1;
  leaf_down_ = leaf_up_;
  host_memory_.assign(hosts, Link{0, m.fabric.host_memory_Bps, 0, 0, 0});
  worker_free_.assign(static_cast<size_t>(m.topo.nranks), 0);
  latency_intra_ = m.latencySeconds(false);
  latency_inter_ = m.latencySeconds(true);
}

int Network::nic(int rank) const {
  const size_t r = static_cast<size_t>(rank % period_);
  return m_.host_of[r] * m_.fabric.nics_per_host + m_.local_of[r] % m_.fabric.nics_per_host;
}

// Where the probe's loaded step (one step with every rank sending, topology.h) exceeds a link
// class's idle α, ranks share cores: each end's software is charged on its rank's thread
// (ClusterModel::perMessageSeconds, receiveSeconds) and the wire's part of α is latency: a step
// costs the loaded step plus that.
double Network::alpha(int src, int dst) const { return sameHost(src, dst) ? latency_intra_ : latency_inter_; }

double Network::receiveWork(int rank, int from, double start, double bytes, bool reduces) {
  // From a socket: its read, then the reduction if any.
  if (!sameHost(rank, from))
    return compute(rank, start, m_.receiveSeconds(true) + (reduces ? bytes / m_.topo.gamma_Bps : 0));
  // Out of the sender's memory: a plain receive copies at intra β, a recvReduce reduces
  // straight from it at γ.
  const double Bps = reduces ? m_.topo.gamma_Bps : m_.topo.intra.beta_Bps;
  return inHostMemory(rank, start, bytes, compute(rank, start, m_.receiveSeconds(false) + bytes / Bps));
}

double Network::copyInHost(int rank, double start, double bytes) {
  return inHostMemory(rank, start, bytes, compute(rank, start, bytes / m_.topo.intra.beta_Bps));
}

// All copies of one host share its memory bandwidth where one is given.
double Network::inHostMemory(int rank, double start, double bytes, double end) {
  Link& mem = host_memory_[static_cast<size_t>(m_.host_of[static_cast<size_t>(rank % period_)])];
  if (mem.Bps > 0) {
    mem.free_at = std::max(mem.free_at, start) + bytes / mem.Bps;
    end = std::max(end, mem.free_at);
  }
  return end;
}

double Network::compute(int rank, double start, double seconds) {
  double& free_at = worker_free_[static_cast<size_t>(rank % period_)];
  free_at = std::max(free_at, start) + seconds;
  return free_at;
}

Network::Sent Network::transfer(int src, int dst, double start, double bytes) {
  // Shared memory: nothing crosses a link; the sender's copy into the ring was charged as it
  // posted (copyInHost), and the receiver reads when its receive runs (receiveWork).
  if (sameHost(src, dst)) return {start, start};
  Link* path[4];
  int hops = 0;
  path[hops++] = &nic_out_[static_cast<size_t>(nic(src))];
  if (!leaf_up_.empty()) {
    const int ls = m_.leafOf(m_.host_of[static_cast<size_t>(src)]);
    const int ld = m_.leafOf(m_.host_of[static_cast<size_t>(dst)]);
    if (ls != ld) {
      path[hops++] = &leaf_up_[static_cast<size_t>(ls % period_leaves_)];
      path[hops++] = &leaf_down_[static_cast<size_t>(ld % period_leaves_)];
    }
  }
  path[hops++] = &nic_in_[static_cast<size_t>(nic(dst))];
  double begin = start, end = start, slowest = 0;
  for (int i = 0; i < hops; ++i) {
    Link& l = *path[i];
    begin = std::max(begin, l.free_at);
    const double seconds = l.sendTime(begin, bytes, peak_Bps_);
    slowest = std::max(slowest, seconds);
    end = std::max(begin + seconds, end);
    l.free_at = end;
  }
  // The sender is done once what is still to leave, this message and whatever queued before it,
  // fits in its send buffer: the buffer's worth of time at the path's slowest rate before the
  // last byte leaves.
  const double buffered = bytes > 0 ? m_.fabric.send_buffer_bytes * slowest / bytes : 0;
  return {std::max(start, end - buffered), end};
}

}  // namespace coll::sim
