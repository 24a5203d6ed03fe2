// COLL_ALGO grammar and the selector's rules, without any ranks.
#include <gtest/gtest.h>

#include "select/algo_override.h"
#include "select/cost_model.h"
#include <cstdlib>

#include "base/log.h"
#include "base/json.h"
#include "select/selector.h"

namespace coll::select {
using namespace coll::topology;  // Topology, LeafSwitches: what the selection is made over
using bootstrap::HostGrouping;
namespace {

using algo::Collective;

TEST(AlgoOverride, EmptyMeansNoRules) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("", &rules).isOk());
  EXPECT_TRUE(rules.empty());
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 8), nullptr);
}

TEST(AlgoOverride, BareNameAppliesToCollectivesThatHaveIt) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("ring", &rules).isOk());
  ASSERT_NE(matchRule(rules, Collective::allreduce, 1 << 20), nullptr);
  EXPECT_EQ(matchRule(rules, Collective::broadcast, 1 << 20), nullptr) << "broadcast has no ring";
  ASSERT_TRUE(parseAlgoOverride("direct", &rules).isOk());
  EXPECT_NE(matchRule(rules, Collective::broadcast, 8), nullptr);
  EXPECT_NE(matchRule(rules, Collective::allreduce, 8), nullptr);
}

TEST(AlgoOverride, SizeRangesAreHalfOpenAndFirstMatchWins) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("allreduce:0-64K:direct;allreduce:64K-inf:ring;broadcast:chain", &rules).isOk());
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 0)->algorithm, "direct");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 65535)->algorithm, "direct");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 65536)->algorithm, "ring");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, SIZE_MAX - 1)->algorithm, "ring");
  EXPECT_EQ(matchRule(rules, Collective::broadcast, 1)->algorithm, "chain");
  ASSERT_TRUE(parseAlgoOverride("allreduce:1M-2M:ring", &rules).isOk());
  EXPECT_EQ(matchRule(rules, Collective::allreduce, (1 << 20) - 1), nullptr);
  EXPECT_NE(matchRule(rules, Collective::allreduce, 1 << 20), nullptr);
}

TEST(AlgoOverride, BadRulesNameTheProblem) {
  std::vector<AlgoRule> rules;
  Status st = parseAlgoOverride("allreduce:butterfly", &rules);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("unknown algorithm 'butterfly'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ring"), std::string::npos) << "lists the valid ones: " << st.message();
  st = parseAlgoOverride("allscatter:ring", &rules);
  EXPECT_NE(st.message().find("unknown collective"), std::string::npos) << st.message();
  st = parseAlgoOverride("allreduce:64K-0:ring", &rules);
  EXPECT_NE(st.message().find("bad size range"), std::string::npos) << st.message();
  st = parseAlgoOverride("broadcast:ring", &rules);
  EXPECT_FALSE(st.isOk()) << "broadcast has no ring";
  EXPECT_FALSE(parseAlgoOverride("a:b:c:d", &rules).isOk());
  // Sizes no size_t holds (converting them was undefined behaviour): refused, not wrapped.
  for (const char* huge : {"allreduce:1e30-inf:ring", "allreduce:nan-inf:ring", "allreduce:0-1e20:ring", "allreduce:0-17179869184G:ring"}) {
    st = parseAlgoOverride(huge, &rules);
    EXPECT_NE(st.message().find("bad size range"), std::string::npos) << huge << ": " << st.message();
  }
}

TEST(AlgoOverride, TreeAndRhdCanBeForced) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("allreduce:0-64K:rhd;allreduce:tree", &rules).isOk());
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 100)->algorithm, "rhd");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 1 << 20)->algorithm, "tree");
  EXPECT_FALSE(parseAlgoOverride("broadcast:tree", &rules).isOk()) << "only all-reduce has them";
}

// A fake topology of `hosts` x `per_host` ranks, through its JSON form (what COLL_TOPO_FILE
// loads), with the given link figures; without a loaded step (0) the file has none, as files
// written before it was kept did.
Topology fake(int hosts, int per_host, double intra_alpha_us = 2.5, double intra_GBps = 10.1,
              double inter_alpha_us = 60, double inter_GBps = 0.1195, double loaded_step_us = 0) {
  std::string layout;
  for (int h = 0, r = 0; h < hosts; ++h) {
    layout += (h ? ", " : "") + std::string("{\"ranks\": [");
    for (int l = 0; l < per_host; ++l, ++r) layout += (l ? ", " : "") + std::to_string(r);
    layout += "]}";
  }
  std::string loaded = loaded_step_us > 0 ? format(", \"loaded_step_us\": %g", loaded_step_us) : "";
  std::string text = format(R"({"format": "coll-topology-1", "nranks": %d, "hosts": [%s],
      "links": {"intra_host": {"alpha_us": %g, "beta_GBps": %g}, "inter_host": {"alpha_us": %g, "beta_GBps": %g}%s},
      "reduce": {"gamma_GBps": 15.1}})", hosts * per_host, layout.c_str(), intra_alpha_us, intra_GBps,
                            inter_alpha_us, inter_GBps, loaded.c_str());
  Json j;
  Topology t;
  EXPECT_TRUE(Json::parse(text, &j).isOk()) << text;
  Status st = fromJson(j, &t);
  EXPECT_TRUE(st.isOk()) << st.message();
  EXPECT_DOUBLE_EQ(t.loaded_step_s, loaded_step_us * 1e-6);
  return t;
}

const char* pick(Selector& s, Collective c, size_t bytes) { return s.choose(c, bytes).algorithm->name; }

// The choice is the cheapest prediction, and every other candidate is listed with a time or
// a reason: no silent selection.
void expectCheapestAndExplained(Selector& s, Collective c, size_t bytes) {
  Choice choice = s.choose(c, bytes);
  size_t candidates = 0;
  for (const auto& a : algo::catalog()) candidates += a.collective == c;
  EXPECT_EQ(choice.rejected.size() + 1, candidates);
  for (const Rejected& r : choice.rejected) {
    if (r.predicted_s >= 0) EXPECT_LE(choice.predicted_s, r.predicted_s) << r.algorithm << " at " << bytes;
    else EXPECT_FALSE(r.reason.empty()) << r.algorithm << " rejected without a reason";
  }
}

TEST(Selector, OneHostChoosesRdWhenSmallThenDirect) {
  Selector s({}, fake(1, 4));
  for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{256} << 20}) {
    EXPECT_STREQ(pick(s, Collective::allreduce, bytes), bytes == 8 ? "rd" : "direct")
        << bytes << ": 2 steps of one message, then 2 steps of one read per peer";
    EXPECT_STREQ(pick(s, Collective::broadcast, bytes), "direct") << bytes;
    expectCheapestAndExplained(s, Collective::allreduce, bytes);
  }
  Choice c = s.choose(Collective::allreduce, 1 << 20);
  bool hierarchical_said_why = false;
  for (const Rejected& r : c.rejected)
    hierarchical_said_why |= r.algorithm == "hierarchical" && r.predicted_s < 0 && r.reason.find("one host") != std::string::npos;
  EXPECT_TRUE(hierarchical_said_why) << describeRejected(c.rejected);
}

TEST(Selector, FourHostsOfOneNeverChooseHierarchical) {
  Selector s({}, fake(4, 1));
  EXPECT_STREQ(pick(s, Collective::allreduce, 8), "rd") << "2 steps of one message beat 2 of 3, and 6";
  EXPECT_STREQ(pick(s, Collective::allreduce, 256 << 20), "ring") << "pipelined: the link's full rate";
  Choice c = s.choose(Collective::allreduce, 1 << 28);
  EXPECT_NE(describeRejected(c.rejected).find("hierarchical: needs every host to hold the same number (>1)"),
            std::string::npos) << describeRejected(c.rejected);
  EXPECT_STREQ(pick(s, Collective::broadcast, 8), "direct") << "one step";
  EXPECT_STREQ(pick(s, Collective::broadcast, 64 << 10), "binomial") << "the root's link would carry 3 copies";
  EXPECT_STREQ(pick(s, Collective::broadcast, 256 << 20), "chain") << "pipelined: one copy per link";
  for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 4) expectCheapestAndExplained(s, Collective::broadcast, bytes);
}

TEST(Selector, BalancedHostsSwitchFromFewestStepsToHierarchical) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{4, 2}}) {
    Selector s({}, fake(hosts, per_host));
    // rd: one intra-host step, then log2 H inter-host ones, one message each; direct: two
    // inter-host steps of n-1 messages.
    EXPECT_STREQ(pick(s, Collective::allreduce, 8), "rd") << hosts << "x" << per_host << ": fewest messages";
    EXPECT_STREQ(pick(s, Collective::allreduce, 1 << 20), "hierarchical") << hosts << "x" << per_host;
    EXPECT_STREQ(pick(s, Collective::allreduce, 256 << 20), "hierarchical") << "each host link carries the buffer once";
    for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 4) expectCheapestAndExplained(s, Collective::allreduce, bytes);
  }
}

// What coll-sim found wrong at scale (docs/SIMULATOR.md, "The selector at scale"), on its
// cluster: hosts of 8 ranks, 100 Gbit/s (11.95 GB/s of payload), 16 hosts to a leaf switch at
// 2:1, no contention, α 2.5 us inside a host and 5 across, which a probe measures as 3.125 and
// 7.5 with the software time of the ends (ClusterModel::probedTopology). Simulated times in us:
// from docs/perf/sim_scale/ where no date is given, else as simulated on that day.
Topology atScale(int hosts, int per_leaf = 0) {
  Topology t = fake(hosts, 8, 3.125, 10.1, 7.5, 11.95);
  t.leaves = {per_leaf, 2};
  return t;
}

TEST(Selector, TreeFillAndHierarchicalMessagesAtScale) {
  // 1 MiB is one slice per tree: the pipeline's fill (2 log2 n levels of a 512 KiB slice) is
  // most of the tree's time. Simulated on 16, 64 and 256 ranks (2026-11-26), hierarchical took
  // 237, 345 and 797 us against tree's 588, 1040 and 1516 (now 427, 541 and 1,098 against 898,
  // 1,360 and 1,837); the model without the fill chose tree.
  for (int hosts : {2, 8, 32}) {
    Selector s({}, atScale(hosts, 16));
    EXPECT_STREQ(pick(s, Collective::allreduce, 1 << 20), "hierarchical") << hosts << " x 8";
  }
  // At 128 hosts hierarchical's phases inside a host send 896 messages of 1 KiB each way: the
  // simulated 2.72 ms against tree's 1.99 ms (2026-11-26; now 3.38 against 2.32). The model
  // without their software cost gave
  // hierarchical 1.71 ms and chose it. (These hosts sit 16 to a leaf switch at 2:1, as in
  // coll-sim's cluster: without the leaves the model prefers rhd, SpineAndStepsInsideHostsAtScale.)
  Selector big({}, atScale(128, 16));
  EXPECT_STREQ(pick(big, Collective::allreduce, 1 << 20), "tree");
  for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 8) expectCheapestAndExplained(big, Collective::allreduce, bytes);
}

TEST(Selector, SpineAndStepsInsideHostsAtScale) {
  // 64 ranks, 64 KiB: rhd 104, tree 152. The model chose tree: it charged rhd's 6 steps inside
  // hosts the crossing α, its link at 0.9 of the rate, and its link time after its steps' α,
  // though 8 ranks keep one NIC busy while each waits; and it let a tree level's two children
  // share the parent's link as if each had it alone.
  Selector eight({}, atScale(8));
  EXPECT_STREQ(pick(eight, Collective::allreduce, 64 << 10), "rhd");
  // At 16 KiB rd's 6 steps win (54 against rhd's 70): rd's link time overlaps its α as rhd's
  // does, or rhd's cheaper steps inside hosts would take this size too.
  EXPECT_STREQ(pick(eight, Collective::allreduce, 16 << 10), "rd");
  // 1,024 ranks, 1 MiB: tree 2,319, rhd 2,741. rhd's first halvings, the largest, cross the
  // oversubscribed uplinks; the tree's edges seldom do. Told the leaves, the model sees it;
  // without them it cannot, and prefers rhd.
  Selector without({}, atScale(128)), with({}, atScale(128, 16));
  EXPECT_STREQ(pick(without, Collective::allreduce, 1 << 20), "rhd");
  EXPECT_STREQ(pick(with, Collective::allreduce, 1 << 20), "tree");
  // 16,384 ranks, 1 MiB: rhd 2,883, tree 3,255; the tree's 14 levels outweigh the spine.
  Selector biggest({}, atScale(2048, 16));
  EXPECT_STREQ(pick(biggest, Collective::allreduce, 1 << 20), "rhd");
  for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 8) expectCheapestAndExplained(with, Collective::allreduce, bytes);
  EXPECT_NE(with.choose(Collective::allreduce, 1 << 20).reason.find("16 per leaf switch at 2:1"), std::string::npos)
      << "the choice names the fabric it priced";
}

// The ring and hierarchical send one edge's share of a host link over each uplink: free where
// an uplink carries a host link or more, a cost where it carries less (a leaf per host at 4:1).
TEST(Selector, RingAndHierarchicalPayOnlyForAnUplinkNarrowerThanAHostLink) {
  const size_t bytes = 64 << 20;
  for (const char* algorithm : {"ring", "hierarchical"}) {
    const double flat = predictTime(Collective::allreduce, algorithm, bytes, 4, atScale(8), 512 << 10).seconds;
    const double wide = predictTime(Collective::allreduce, algorithm, bytes, 4, atScale(8, 4), 512 << 10).seconds;
    Topology narrow_leaves = atScale(8, 1);
    narrow_leaves.leaves.oversubscription = 4;
    const double narrow = predictTime(Collective::allreduce, algorithm, bytes, 4, narrow_leaves, 512 << 10).seconds;
    EXPECT_DOUBLE_EQ(wide, flat) << algorithm;
    EXPECT_GT(narrow, 2 * flat) << algorithm << ": a quarter of a host link per leaf";
  }
}

TEST(Selector, LinkFiguresMoveTheCrossover) {
  // Slow inter-host latency favours rd's 2 inter-host steps of one message for longer (rhd
  // takes 4 crossing steps; at 1 ms each its 2 inside hosts left it level with rd at 128 KiB);
  // a fast network favours hierarchical from smaller sizes.
  Selector slow({}, fake(4, 2, 2.5, 10.1, 2000, 0.1195));
  Selector fast({}, fake(4, 2, 2.5, 10.1, 5, 0.1195));
  EXPECT_STREQ(pick(slow, Collective::allreduce, 128 << 10), "rd");
  EXPECT_STREQ(pick(fast, Collective::allreduce, 128 << 10), "hierarchical");
  // A network as fast as memory: splitting the work by host buys nothing where bandwidth
  // decides (at 64 KiB hierarchical's 4 steps against the ring's 6 still tip it, 26 us to 28).
  Selector flat({}, fake(2, 2, 2.5, 10.1, 2.5, 10.1));
  EXPECT_STRNE(pick(flat, Collective::allreduce, 1 << 20), "hierarchical");
}

TEST(Selector, UnevenHostsFallBackFromHierarchicalWithAReason) {
  Topology t = fake(2, 2);
  t.ranks_of_host = {{0, 1, 2}, {3}};
  Selector s({}, t);
  Choice c = s.choose(Collective::allreduce, 256 << 20);
  EXPECT_STRNE(c.algorithm->name, "hierarchical");
  EXPECT_NE(describeRejected(c.rejected).find("needs every host"), std::string::npos);
}

// The simulated 4 hosts x 2 cluster (8 ranks on 2 cores; netcluster at 1gbit, selector_table.sh,
// now bench/compare.py --algos; 2026-11-23, docs/perf/selector_4x2.log at 1c66ffe): idle
// inter-host α 6.5 us, loaded step 70 us. A float32 8 B all-reduce (2 elements) measured rhd
// 178 us, rd 215: most of rhd's messages are empty. At 32 B (8 elements) rd 198 beat rhd 413.
TEST(Selector, ContentionChargesTheJobsNonEmptyMessages) {
  Selector loaded({}, fake(4, 2, 4.5, 5.13, 6.5, 0.127, 70));
  EXPECT_STREQ(pick(loaded, Collective::allreduce, 8), "rhd") << "6 hops, 16 messages against rd's 3 and 24";
  EXPECT_STREQ(pick(loaded, Collective::allreduce, 32), "rd") << "every block non-empty: rhd sends 48";
  EXPECT_STREQ(loaded.choose(Collective::allreduce, 8, 1).algorithm->name, "rd") << "8 B of u8 is 8 elements";
  EXPECT_STREQ(pick(loaded, Collective::allreduce, 256 << 20), "hierarchical");
  for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 4)
    expectCheapestAndExplained(loaded, Collective::allreduce, bytes);
  // A loaded step no slower than the idle α: no contention, the model as without one.
  Selector idle({}, fake(4, 2, 4.5, 5.13, 6.5, 0.127, 6.5));
  EXPECT_STREQ(pick(idle, Collective::allreduce, 8), "rd");
  Selector two({}, fake(2, 2, 2.5, 10, 6.5, 0.125, 100));
  EXPECT_STREQ(pick(two, Collective::allreduce, 256 << 20), "hierarchical");
}

TEST(Selector, RulesOverrideTheModelAndSayWhy) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("allreduce:0-1K:ring", &rules).isOk());
  Selector s(rules, fake(4, 2));
  Choice small = s.choose(Collective::allreduce, 512);
  EXPECT_STREQ(small.algorithm->name, "ring");
  EXPECT_NE(small.reason.find("COLL_ALGO"), std::string::npos) << small.reason;
  EXPECT_GT(small.predicted_s, 0) << "a forced choice still shows its predicted time";
  EXPECT_NE(describeRejected(small.rejected).find("direct"), std::string::npos) << "the model's choice is shown";
  EXPECT_STREQ(pick(s, Collective::allreduce, 1 << 20), "hierarchical");
}

TEST(Selector, TuningOverridesTheModelWithinItsRange) {
  TuningTable tuning;
  tuning.entries = {{Collective::allreduce, 1 << 20, "ring", 5e-3}};
  Selector s({}, fake(4, 2), 512 << 10, tuning);
  Choice c = s.choose(Collective::allreduce, 1 << 20);
  EXPECT_STREQ(c.algorithm->name, "ring");
  EXPECT_NE(c.reason.find("COLL_TUNE"), std::string::npos);
  EXPECT_STREQ(pick(s, Collective::allreduce, 8), "rd") << "outside the tuned range the model decides";
}

// Logging is configured once per process, on first use, from the environment: set it before
// any test runs (static initialisation), as a launcher would.
[[maybe_unused]] const bool kInfoLogging = (::setenv("COLL_DEBUG", "INFO", 0), ::setenv("COLL_DEBUG_SUBSYS", "TUNE", 0), true);

// Each distinct choice is logged once, with its predicted time and the rejected candidates.
TEST(Selector, LogsEachDistinctChoiceOnceWithRejectedCandidates) {
  Selector s({}, fake(4, 2));
  testing::internal::CaptureStderr();
  s.choose(Collective::allreduce, 8);
  s.choose(Collective::allreduce, 16);
  s.choose(Collective::allreduce, 256 << 20);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("allreduce of 8 B -> rd in slices of 512 KiB, predicted"), std::string::npos) << log;
  EXPECT_EQ(log.find("allreduce of 16 B"), std::string::npos) << "same choice: logged once\n" << log;
  EXPECT_NE(log.find("-> hierarchical"), std::string::npos) << log;
  EXPECT_NE(log.find("rejected: "), std::string::npos) << log;
  EXPECT_NE(log.find("ring "), std::string::npos) << "the ring's predicted time: " << log;
}

HostGrouping hostsOf(int num_hosts) {
  HostGrouping h;
  h.num_hosts = num_hosts;
  return h;
}

TEST(Selector, AGroupingWithoutRanksUsesDefaultFigures) {
  Selector s({}, hostsOf(4));
  EXPECT_EQ(s.topology().numHosts(), 4);
  EXPECT_STREQ(pick(s, Collective::allreduce, 8), "rd");
}

}  // namespace
}  // namespace coll::select
