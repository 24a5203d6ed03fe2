#include "coll_topo_print.h"

#include <algorithm>
#include <vector>

#include "algorithms/board.h"
#include "algorithms/catalog.h"
#include "base/config.h"
#include "base/log.h"
#include "select/cost_model.h"
#include "select/selector.h"

namespace coll::tools {
namespace {

using topology::Topology;

// The tables price float32 buffers (what the benches reduce): the element size tells the model
// how many chunks of a small buffer are empty.
constexpr size_t kElemSize = 4;

std::string rankRange(const std::vector<int>& ranks) {
  bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (ranks.size() > 1 && contiguous) return format("%d-%d", ranks.front(), ranks.back());
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

std::string nicsOf(const topology::HostHardware& hw) {
  std::string s;
  for (const auto& n : hw.nics)
    s += (s.empty() ? "" : " ") + n.name + format("(numa %d%s)", n.numa_node, n.rdma ? ", rdma" : "");
  return s.empty() ? "-" : s;
}

std::string gpusOf(const topology::HostHardware& hw) {
  std::string s;
  for (const auto& g : hw.gpus) s += (s.empty() ? "" : " ") + g.pci + format("(numa %d)", g.numa_node);
  return s.empty() ? "-" : s;
}

std::string linkLine(const char* name, const topology::LinkParams& l, bool present) {
  return format("  %-11s alpha %9.1f us   beta %8.3f GB/s   %s%s\n", name, l.alpha_s * 1e6, l.beta_Bps / 1e9,
                l.source.c_str(), present ? "" : "  [no such link in this job]");
}

}  // namespace

std::string topologyTable(const Topology& t) {
  std::string out = format("coll topology: %d rank(s) on %d host(s)%s\n\n", t.nranks, t.numHosts(),
                           t.balanced() ? "" : " (unbalanced)");
  out += format("%-5s %-9s %-16s %4s %5s %4s %9s  %-28s %s\n", "host", "ranks", "hostname", "numa", "cores", "pus",
                "L3", "NICs", "GPUs");
  for (size_t h = 0; h < t.ranks_of_host.size(); ++h) {
    topology::HostHardware hw;
    if (h < t.hardware.size()) hw = t.hardware[h];
    out += format("%-5zu %-9s %-16s %4d %5d %4d %9s  %-28s %s\n", h, rankRange(t.ranks_of_host[h]).c_str(),
                  hw.hostname.empty() ? "?" : hw.hostname.c_str(), hw.numa_nodes, hw.cores, hw.pus,
                  hw.l3_bytes ? formatBytes(static_cast<size_t>(hw.l3_bytes)).c_str() : "-", nicsOf(hw).c_str(),
                  gpusOf(hw).c_str());
  }
  if (!t.hardware.empty()) out += format("(hardware detected by %s)\n", t.hardware.front().source.c_str());
  out += "\nlinks:\n";
  out += linkLine("intra_host", t.intra, t.maxRanksPerHost() > 1);
  out += linkLine("inter_host", t.inter, t.numHosts() > 1);
  out += format("  %-11s       %9.1f us   %s\n", "loaded", t.loaded_step_s * 1e6,
                t.loaded_step_s > 0 ? "a step of chained 8 B ring shifts, every rank at once" : "not measured");
  out += format("  %-11s gamma %8.2f GB/s   %s\n", "reduce", t.gamma_Bps / 1e9, t.gamma_source.c_str());
  if (t.leaves.hosts_per_leaf > 0)
    out += format("  %-11s %d host(s) per leaf switch, uplinks %g:1 oversubscribed (%d leaves; from the file)\n",
                  "fabric", t.leaves.hosts_per_leaf, t.leaves.oversubscription, t.leaves.leaves(t.numHosts()));
  return out;
}

// On one host, the shared-memory board a job there would have (COLL_SHM_BOARD_BYTES's
// default), so that the table prices it beside the schedules; between hosts there is none.
Topology withBoard(const Topology& topo, std::string* note) {
  Topology t = topo;
  if (t.numHosts() != 1 || t.board_bytes > 0) return t;
  t.board_bytes = Config{}.shm_board_bytes;
  t.board_broadcast_bytes = std::min(t.board_bytes, algo::cost::kBoardBroadcastBytes);
  *note = format("board: one host, so the shared-memory board of COLL_SHM_BOARD_BYTES=%zu is priced too\n", t.board_bytes);
  return t;
}

std::string explainTable(const Topology& topo, size_t slice_bytes) {
  std::string out;
  const Topology t = withBoard(topo, &out);
  select::Selector selector({}, t, slice_bytes);
  for (algo::Collective c : algo::kAllCollectives) {
    std::vector<const algo::AlgorithmInfo*> candidates;
    for (const auto& a : algo::catalog())
      if (a.collective == c) candidates.push_back(&a);
    if (candidates.size() < 2) continue;
    out += format("\n%s: predicted time per algorithm ('*' = the selector's choice)\n%10s", algo::toString(c), "size");
    for (const auto* a : candidates) out += format(" %14s", a->name);
    out += "\n";
    for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 4) {
      select::Choice choice = selector.modelChoice(c, bytes, kElemSize);
      out += format("%10s", formatBytes(bytes).c_str());
      for (const auto* a : candidates) {
        select::Prediction p = select::predictTime(c, a->name, bytes, kElemSize, t, slice_bytes);
        std::string cell = p.supported ? select::formatSeconds(p.seconds) : "n/a";
        out += format(" %13s%s", cell.c_str(), a == choice.algorithm ? "*" : " ");
      }
      out += "\n";
    }
    for (const auto* a : candidates) {
      select::Prediction p = select::predictTime(c, a->name, 1 << 20, kElemSize, t, slice_bytes);
      out += format("  %-13s %s%s%s\n", a->name, a->description, p.supported ? "" : "; n/a: ", p.supported ? "" : p.why_not);
    }
  }
  return out;
}

}  // namespace coll::tools
