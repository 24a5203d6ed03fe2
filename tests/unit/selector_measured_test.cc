// The selector against what the simulated cluster measured: for each start-up logged in
// docs/perf/selector_{2x2,4x2}.log as committed in 5b178d8 (netcluster at 1gbit,
// selector_table.sh, now bench/compare.py --algos; 2026-11-23, before socket polling), the
// topology its probe agreed (tests/data/netcluster/*.json, figures copied from the log's TOPO
// lines) and the log's table of every algorithm forced at each size. A choice "hits" at a size
// when the algorithm the cost model picks on that topology was within 10% of the fastest forced
// one.
//
// Two kinds of test, named for what they are:
// - SelectorMeasured.*MeetsTarget: evidence. The bar is issue 4's target, set before these
//   figures were known: over all start-ups of a setup, the choice hits at 90% of the sizes.
// - SelectorMeasuredChangeDetector.*: each start-up's hit count must not drop below what the
//   model scores today (the numbers are today's scores, not a target). They catch a model
//   change that moves choices away from what was measured, offline, without the cluster; when
//   a deliberate change improves a count, raise it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/log.h"
#include "select/selector.h"

namespace coll::select {
using namespace coll::topology;  // Topology, LeafSwitches: what the selection is made over
using bootstrap::HostGrouping;
namespace {

using algo::Collective;

// The log's columns, in its order; time in us (median of 5 rounds).
constexpr const char* kAlgos[] = {"ring", "direct", "hierarchical", "rhd", "tree", "rd"};
struct Row {
  size_t bytes;
  double us[6];
};

const std::vector<Row> k2x2 = {
    {8, {188.12, 72.02, 128.34, 109.50, 170.10, 67.02}},
    {32, {236.85, 175.55, 163.86, 146.49, 153.46, 79.38}},
    {128, {221.94, 174.04, 158.23, 157.54, 170.44, 80.52}},
    {512, {222.27, 164.58, 157.94, 151.24, 177.53, 76.64}},
    {2048, {204.51, 165.14, 142.49, 146.87, 178.84, 77.53}},
    {8192, {228.35, 184.26, 147.46, 160.83, 182.42, 129.42}},
    {32768, {407.36, 545.33, 268.60, 542.59, 542.51, 545.03}},
    {262144, {3053.60, 4274.69, 1831.81, 4027.89, 4643.28, 4354.09}},
    {1048576, {12514.4, 18808.8, 8674.58, 17212.8, 19007.2, 17501.8}},
    {4194304, {50810.5, 71973.3, 40302.3, 71013.8, 69680.8, 70971.2}},
    {16777216, {204968, 284595, 146981, 281325, 282775, 283999}},
    {67108864, {817457, 1139191, 580638, 1125357, 1129471, 1126326}},
    {268435456, {3384631, 4573750, 2314861, 4490355, 4524395, 4496382}},
};

const std::vector<Row> k4x2 = {
    {8, {312.33, 257.51, 311.71, 178.60, 371.67, 243.79}},
    {32, {683.17, 667.05, 600.81, 399.77, 337.36, 206.10}},
    {128, {716.94, 627.93, 581.36, 394.75, 337.98, 204.53}},
    {512, {756.80, 641.95, 620.56, 406.97, 331.31, 200.39}},
    {2048, {748.43, 653.77, 588.56, 408.45, 357.41, 236.38}},
    {8192, {693.37, 655.19, 598.55, 433.02, 358.09, 271.49}},
    {32768, {855.26, 854.74, 661.65, 820.33, 820.17, 1090.94}},
    {262144, {3458.93, 6164.00, 3063.58, 7296.20, 9047.71, 9708.36}},
    {1048576, {14921.4, 34057.2, 14479.6, 27045.5, 32507.2, 39093.8}},
    {4194304, {61937.1, 155319, 64435.3, 128064, 115014, 154563}},
    {16777216, {243192, 567853, 222737, 485790, 484789, 594348}},
    {67108864, {968857, 1827769, 901616, 1980999, 1884201, 2393936}},
};

// The same, rerun on the code after socket polling (docs/perf/selector_{2x2,4x2}_final.log at 741ac63,
// 2026-11-23, median of 3 rounds; 4 x 2 up to 64 MiB as the target counts), with the
// start-ups logged there (tests/data/netcluster/*_final_start*.json).
const std::vector<Row> k2x2Final = {
    {8, {50.43, 45.67, 34.58, 33.73, 58.6, 30.08}},
    {32, {85.5, 89.35, 47.2, 63.53, 58.3, 30.29}},
    {128, {80.93, 89.95, 46.02, 53.74, 50.08, 30.48}},
    {512, {86.29, 92.47, 47.93, 54.35, 53.3, 33.54}},
    {2048, {74.85, 85.61, 50.7, 61.15, 53.53, 42.72}},
    {8192, {102.19, 135.55, 63.14, 130.3, 130.55, 129.14}},
    {32768, {434.36, 552.62, 275.46, 548.96, 549.52, 546.04}},
    {262144, {3045.84, 3932.91, 1850.09, 3927.65, 4347.24, 4311.15}},
    {1048576, {12836.8, 17356.6, 8753.15, 16988.7, 16397.9, 17333.8}},
    {4194304, {50873.8, 69837.2, 38701.4, 75873.7, 70309.3, 72766.7}},
    {16777216, {204024, 282478, 145496, 276732, 282988, 287543}},
    {67108864, {816952, 1141902, 576750, 1131411, 1129003, 1127053}},
    {268435456, {3446527, 4673792, 2301536, 4484391, 4502364, 4521255}},
};

const std::vector<Row> k4x2Final = {
    {8, {242.3, 113.34, 137.59, 115.39, 165.08, 150.16}},
    {32, {429.19, 351.88, 337.09, 229.19, 163.19, 145.7}},
    {128, {388.77, 380.87, 319.57, 216.5, 164.29, 147.74}},
    {512, {433.73, 373.19, 305.19, 182.8, 163.96, 151.13}},
    {2048, {357.59, 380.59, 310.46, 205.6, 161.02, 164.16}},
    {8192, {388.13, 516.99, 298.89, 247.04, 201.51, 269.52}},
    {32768, {483.1, 833.82, 414.07, 820.12, 819.52, 1091.3}},
    {262144, {3529.12, 6263.2, 3052.09, 6311.76, 9652.98, 9933.89}},
    {1048576, {14878.3, 38418.9, 16681.3, 26826.2, 31857.5, 37599.3}},
    {4194304, {61539.6, 143167, 62492.1, 121713, 121678, 155669}},
    {16777216, {243385, 455887, 219906, 476140, 489693, 598520}},
    {67108864, {967856, 1784227, 894530, 1997320, 1902563, 2355964}},
};

Topology load(const std::string& name) {
  Topology t;
  Status st = loadTopologyFile(std::string(COLL_TEST_DATA_DIR) + "/netcluster/" + name + ".json", &t);
  EXPECT_TRUE(st.isOk()) << st.message();
  return t;
}

// Sizes at which the selector's choice is within 10% of the fastest; the others are listed
// in *misses as "size: choice (its time over the fastest)".
int withinTenPercent(const Topology& t, const std::vector<Row>& table, std::string* misses) {
  Selector s({}, t);
  int within = 0;
  for (const Row& row : table) {
    const char* chosen = s.choose(Collective::allreduce, row.bytes).algorithm->name;
    double best = *std::min_element(row.us, row.us + 6), mine = -1;
    for (int a = 0; a < 6; ++a)
      if (std::string(kAlgos[a]) == chosen) mine = row.us[a];
    EXPECT_GT(mine, 0) << chosen << " was not measured";
    if (mine <= 1.10 * best) ++within;
    else *misses += format(" %zu: %s (%.2f)", row.bytes, chosen, mine / best);
  }
  return within;
}

// Each start-up's hit count on `setup`'s tables; loaded_us > 0 replaces each start-up's loaded
// step (what-if: a probe that measured another busy-step cost).
std::vector<int> hitsPerStartUp(const char* setup, const std::vector<Row>& table, int start_ups,
                                double loaded_us = 0) {
  std::vector<int> hits;
  for (int i = 1; i <= start_ups; ++i) {
    std::string misses;
    Topology t = load(format("%s_start%d", setup, i));
    if (loaded_us > 0) t.loaded_step_s = loaded_us * 1e-6;
    hits.push_back(withinTenPercent(t, table, &misses));
    std::printf("%s start-up %d: within 10%% at %d of %zu sizes;%s\n", setup, i, hits.back(), table.size(),
                misses.empty() ? " no misses" : (" misses" + misses).c_str());
  }
  return hits;
}

// Evidence: issue 4's target, hits at 90% of (start-up, size) pairs of the setup.
void expectTarget(const char* setup, const std::vector<Row>& table) {
  const std::vector<int> hits = hitsPerStartUp(setup, table, 4);
  int total = 0;
  for (int h : hits) total += h;
  EXPECT_GE(total, 0.9 * static_cast<double>(table.size() * hits.size()))
      << setup << ": " << total << " hits of " << table.size() * hits.size();
}

// Change detector: each start-up's hits at least today's.
void expectNoFewerHits(const char* setup, const std::vector<Row>& table, const std::vector<int>& today,
                       double loaded_us = 0) {
  const std::vector<int> hits = hitsPerStartUp(setup, table, static_cast<int>(today.size()), loaded_us);
  for (size_t i = 0; i < today.size(); ++i)
    EXPECT_GE(hits[i], today[i]) << setup << " start-up " << i + 1 << " lost hits it has today";
}

TEST(SelectorMeasured, TwoHostsOfTwoMeetsTarget) { expectTarget("2x2", k2x2); }
TEST(SelectorMeasured, FourHostsOfTwoMeetsTarget) { expectTarget("4x2", k4x2); }
TEST(SelectorMeasured, TwoHostsOfTwoFinalMeetsTarget) { expectTarget("2x2_final", k2x2Final); }
// No such test for 4 x 2 after socket polling: the model does not meet the target there (40
// hits of 48 today; the misses and their cause are in the comment above FourHostsOfTwoFinal
// below). Only the change detector guards it.

// The one miss of every 2 x 2 start-up is 8 KiB: hierarchical (147 us) for rd (129). Its 4
// steps cost ~36 us each there, more than the probe's loaded step (19-29 us) says.
TEST(SelectorMeasuredChangeDetector, TwoHostsOfTwo) { expectNoFewerHits("2x2", k2x2, {12, 12, 12, 12}); }
// 8 B, where rhd (179 us) beat rd (244 us, but 200-206 at 32-512 B), goes to rd wherever the
// idle inter-host α came out in its upper mode (30 us: start-ups 2 and 4), which floors
// rhd's mostly idle steps. Start-up 2's probe saw no contention at all (loaded step 30.8 us
// against the 57-75 us steps cost), so at 8 KiB the tree's 6 steps look cheaper than rd's
// link time (tree 358 us measured, rd 271).
TEST(SelectorMeasuredChangeDetector, FourHostsOfTwo) { expectNoFewerHits("4x2", k4x2, {12, 10, 12, 11}); }

// On the code after socket polling the probe's loaded step (5.4-15.7 us on 2 x 2, 17.5-28.9 on
// 4 x 2) undercounts what a step of a real op costs there: a ring all-reduce of 32-512 B took
// 13.5-14.4 us per step on 2 x 2 and 27.8-31.0 on 4 x 2 (the tree 12.5-14.6 and 27.2-27.4).
// 2 x 2 misses 2 KiB (hierarchical's 4 steps look cheaper than rd's link time) where the loaded
// step came out under 10 us; 4 x 2 misses 8 B (rd for direct or rhd) and 8 KiB (hierarchical's
// 8 steps look cheaper than the tree's link time) under 24 us, and 1 MiB everywhere (ring 0.89
// of hierarchical there, 0.97-1.10 at 256 KiB-64 MiB).
TEST(SelectorMeasuredChangeDetector, TwoHostsOfTwoFinal) {
  expectNoFewerHits("2x2_final", k2x2Final, {13, 12, 12, 13});
}
TEST(SelectorMeasuredChangeDetector, FourHostsOfTwoFinal) {
  expectNoFewerHits("4x2_final", k4x2Final, {9, 11, 9, 11});
}

// A what-if, not evidence about the selector: the busy step is charged what a real op's step
// cost, a figure fitted from the very tables it is scored against (ring's time at 128 B over
// its 2(n-1) steps: 80.93 / 6 on 2 x 2, 388.77 / 14 on 4 x 2), and the counts are today's. It
// pins that, given that one figure, the model's formulas rank the algorithms as measured at
// every start-up (2 x 2: 13 of 13; 4 x 2: 11 of 12), so a change to the formulas that loses
// this fails here; what is left is the probe's figure, not the formulas
// (bench/scripts/selector_offline.py --loaded-us sweeps it: 2 x 2 reaches 13/13 for a busy
// step of 10-32 us, 4 x 2 11/12 for 27-34 us).
TEST(SelectorMeasuredChangeDetector, FinalWithAnOpsStepCostFittedToTheTables) {
  expectNoFewerHits("2x2_final", k2x2Final, {13, 13, 13, 13}, 80.93 / 6);
  expectNoFewerHits("4x2_final", k4x2Final, {11, 11, 11, 11}, 388.77 / 14);
}

}  // namespace
}  // namespace coll::select
