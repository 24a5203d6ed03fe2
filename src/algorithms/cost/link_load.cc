#include "algorithms/cost/link_load.h"

#include <algorithm>

#include "algorithms/patterns/double_binary_tree.h"
#include "algorithms/patterns/halving_doubling.h"

namespace coll::algo::cost::links {
namespace {

// Bytes (as shares of the buffer) each way over one kind of link, per link.
struct EachWay {
  std::vector<double> out, in;
  explicit EachWay(int links) : out(static_cast<size_t>(links), 0.0), in(static_cast<size_t>(links), 0.0) {}
  void add(int from, int to, double share) {
    out[static_cast<size_t>(from)] += share;
    in[static_cast<size_t>(to)] += share;
  }
  // A link carries each way on its own (netcluster's tbf on both ends of each veth; a switch
  // port): the busier direction of the busiest link bounds.
  double busiest() const {
    double most = 0;
    for (size_t l = 0; l < out.size(); ++l) most = std::max({most, out[l], in[l]});
    return most;
  }
};

// Bytes (as shares of the buffer) each host sends out and takes in across its link, and each
// leaf switch across its uplink to the spine.
class LinkTraffic {
 public:
  LinkTraffic(const std::vector<int>& host_of, const LeafSwitches& leaves)
      : LinkTraffic(host_of, leaves, hostCount(host_of)) {}
  void send(int from, int to, double share) {
    const int a = host_of_[static_cast<size_t>(from)], b = host_of_[static_cast<size_t>(to)];
    if (a == b) return;
    hosts_.add(a, b, share);
    if (leaves_.leafOf(a) != leaves_.leafOf(b)) uplinks_.add(leaves_.leafOf(a), leaves_.leafOf(b), share);
  }
  double busiest() const {
    const double uplinks = uplinks_.out.size() > 1 ? uplinks_.busiest() / leaves_.uplinkInHostLinks() : 0;
    return std::max(hosts_.busiest(), uplinks);
  }

 private:
  LinkTraffic(const std::vector<int>& host_of, const LeafSwitches& leaves, int hosts)
      : host_of_(host_of), leaves_(leaves), hosts_(hosts), uplinks_(leaves.leaves(hosts)) {}
  static int hostCount(const std::vector<int>& host_of) {
    int hosts = 0;
    for (int h : host_of) hosts = std::max(hosts, h + 1);
    return hosts;
  }
  const std::vector<int>& host_of_;
  LeafSwitches leaves_;
  EachWay hosts_, uplinks_;
};

}  // namespace

// Halving step s sends m = p2 >> (s+1) of the p2 blocks to the partner v ^ m: the farthest
// partner first, so with ranks numbered host by host the steps that cross hosts are the first
// ones, which carry the largest halves (4 x 2: 3 buffers per host link, not 2(H-1)/H = 1.5).
// The doubling step at distance m sends as many blocks to the same partner. The fold moves
// the whole buffer from each donor to its absorber and back (rhd_allreduce.cc). Each step
// waits for the one before, so its busiest link bounds it alone, and the steps' bounds add:
// behind leaf switches the first halvings load the uplinks and the later ones the host links
// (256 ranks under 2 leaves at 2:1: 11.75 buffers a phase, where the busiest link's total is
// 8; coll-sim's rhd took 1.6x the total's time). Where every host carries the same in every
// step (a power-of-two rank count, hosts alike, one switch) this is the busiest host's total;
// the fold of other counts loads only some hosts (3 hosts of 1: 3 buffers, where the total
// gave 2).
double rhdAllreduce(const std::vector<int>& host_of, const LeafSwitches& leaves) {
  const int n = static_cast<int>(host_of.size());
  const int p2 = algo::hd::powerOfTwoFloor(n), steps = algo::hd::log2Floor(n);
  double sum = 0;
  for (int s = 0; s < steps; ++s) {
    LinkTraffic t(host_of, leaves);
    for (int v = 0; v < p2; ++v) {
      const algo::hd::Exchange x = algo::hd::halvingStep(v, p2, s);
      const double share = static_cast<double>(x.send.last - x.send.first) / p2;
      t.send(algo::hd::realRank(v, n), algo::hd::realRank(x.partner, n), share);
    }
    sum += 2 * t.busiest();  // and the doubling step at the same distance
  }
  if (algo::hd::extraRanks(n) == 0) return sum;
  LinkTraffic fold_in(host_of, leaves), fold_out(host_of, leaves);
  for (int r = 0; r < 2 * algo::hd::extraRanks(n); r += 2) {
    fold_in.send(r, algo::hd::foldPartner(r), 1.0);
    fold_out.send(algo::hd::foldPartner(r), r, 1.0);
  }
  return sum + fold_in.busiest() + fold_out.busiest();
}

// Each tree carries half the buffer: up every edge in the reduction, down it in the broadcast
// (tree_allreduce.cc).
double treeAllreduce(const std::vector<int>& host_of, const LeafSwitches& leaves) {
  const int n = static_cast<int>(host_of.size());
  LinkTraffic t(host_of, leaves);
  for (int tree = 0; tree < 2; ++tree)
    for (int r = 0; r < n; ++r) {
      const int parent = algo::dbtree::treeNode(tree, r, n).parent;
      if (parent < 0) continue;
      t.send(r, parent, 0.5);
      t.send(parent, r, 0.5);
    }
  return t.busiest();
}

}  // namespace coll::algo::cost::links
