// The selector against what the simulated cluster measured: for each start-up logged in
// docs/perf/selector_{2x2,4x2}.log (netcluster at 1gbit, bench/scripts/selector_table.sh,
// 2026-11-23), the topology its probe agreed (tests/data/netcluster/*.json, figures copied
// from the log's TOPO lines) and the log's table of every algorithm forced at each size. The
// cost model's choice on that topology must be within 10% of the fastest forced algorithm at
// the sizes counted below: a model change that moves choices away from what was measured
// fails here, offline, without the cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/log.h"
#include "topology/selector.h"

namespace coll::topology {
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

void check(const char* setup, const std::vector<Row>& table, std::vector<int> at_least) {
  int total = 0;
  for (size_t i = 0; i < at_least.size(); ++i) {
    std::string misses;
    const int within = withinTenPercent(load(format("%s_start%zu", setup, i + 1)), table, &misses);
    std::printf("%s start-up %zu: within 10%% at %d of %zu sizes;%s\n", setup, i + 1, within, table.size(),
                misses.empty() ? " no misses" : (" misses" + misses).c_str());
    EXPECT_GE(within, at_least[i]) << setup << " start-up " << i + 1 << ", misses" << misses;
    total += within;
  }
  EXPECT_GE(total, 0.9 * static_cast<double>(table.size() * at_least.size())) << setup;
}

// The one miss of every 2 x 2 start-up is 8 KiB: hierarchical (147 us) for rd (129). Its 4
// steps cost ~36 us each there, more than the probe's loaded step (19-29 us) says.
TEST(SelectorMeasured, TwoHostsOfTwo) { check("2x2", k2x2, {12, 12, 12, 12}); }
// 8 B, where rhd (179 us) beat rd (244 us, but 200-206 at 32-512 B), goes to rd wherever the
// idle inter-host α came out in its upper mode (30 us: start-ups 2 and 4), which floors
// rhd's mostly idle steps. Start-up 2's probe saw no contention at all (loaded step 30.8 us
// against the 57-75 us steps cost), so at 8 KiB the tree's 6 steps look cheaper than rd's
// link time (tree 358 us measured, rd 271).
TEST(SelectorMeasured, FourHostsOfTwo) { check("4x2", k4x2, {12, 10, 12, 11}); }

}  // namespace
}  // namespace coll::topology
