// The Topology value without ranks: JSON written and read back, bad files refused with the
// field named, and the hardware detector on this machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "topology/detector.h"
#include "base/json.h"
#include "topology/topology.h"
#include "select/tuning.h"

namespace coll::topology {
using bootstrap::HostGrouping;
namespace {

Topology twoByTwo() {
  Topology t;
  t.nranks = 4;
  t.ranks_of_host = {{0, 1}, {2, 3}};
  HostHardware hw;
  hw.hostname = "h0";
  hw.source = "test";
  hw.numa_nodes = 2;
  hw.cores = 16;
  hw.pus = 32;
  hw.l3_bytes = 32 << 20;
  hw.nics = {{"ib0", "0000:3b:00.0", 1, true}, {"eth0", "0000:00:03.0", -1, false}};
  hw.gpus = {{"0000:5e:00.0", "0x10de", 0}};
  t.hardware = {hw, hw};
  t.hardware[1].hostname = "h1 \"quoted\"\n";
  t.intra = {3.25e-6, 9.5e9, "probe (ranks 0-1)"};
  t.inter = {61.5e-6, 0.1195e9, "default (iperf3)"};
  t.gamma_Bps = 15.1e9;
  t.gamma_source = "probe";
  t.loaded_step_s = 70e-6;
  return t;
}

TEST(Json, ParsesWhatItWrites) {
  Json j = Json::object();
  j.set("a", 1.5).set("x", "y");  // set returns the member
  Json arr = Json::array();
  arr.push(true).kind();
  arr.push(Json());
  arr.push("s\\\"\t");
  j.set("arr", arr);
  for (int indent : {-1, 2}) {
    Json back;
    ASSERT_TRUE(Json::parse(j.dump(indent), &back).isOk()) << j.dump(indent);
    EXPECT_EQ(back.dump(), j.dump());
  }
  Json bad;
  Status st = Json::parse("{\"a\": [1, 2,}", &bad);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("offset"), std::string::npos) << st.message();
  EXPECT_FALSE(Json::parse("[1] 2", &bad).isOk()) << "trailing garbage";
  EXPECT_FALSE(Json::parse(std::string(100, '['), &bad).isOk()) << "nesting is bounded";
}

TEST(TopologyJson, RoundTripKeepsEveryField) {
  Topology t = twoByTwo();
  Topology back;
  Json j;
  ASSERT_TRUE(Json::parse(toJson(t).dump(2), &j).isOk());
  ASSERT_TRUE(fromJson(j, &back).isOk());
  EXPECT_EQ(toJson(back).dump(), toJson(t).dump());
  EXPECT_EQ(back.ranks_of_host, t.ranks_of_host);
  EXPECT_DOUBLE_EQ(back.inter.alpha_s, t.inter.alpha_s);
  EXPECT_DOUBLE_EQ(back.loaded_step_s, t.loaded_step_s);
  EXPECT_DOUBLE_EQ(back.intra.beta_Bps, t.intra.beta_Bps);
  EXPECT_EQ(back.hardware[1].hostname, t.hardware[1].hostname);
  EXPECT_TRUE(back.hardware[0].nics[0].rdma);
  EXPECT_EQ(back.hardware[0].gpus[0].numa_node, 0);
  EXPECT_EQ(back.layoutHash(), t.layoutHash());
}

// Leaf switches come only from a file's "fabric" object, which coll-sim's files share (they
// keep more keys there); no object means one switch.
TEST(TopologyJson, LeafSwitchesFromTheFabricObject) {
  Topology t = twoByTwo(), back;
  Json j;
  ASSERT_TRUE(Json::parse(toJson(t).dump(), &j).isOk());
  EXPECT_FALSE(j.has("fabric")) << "one switch: nothing written";
  t.leaves = {16, 2.5};
  ASSERT_TRUE(Json::parse(toJson(t).dump(), &j).isOk());
  ASSERT_TRUE(fromJson(j, &back).isOk());
  EXPECT_EQ(back.leaves.hosts_per_leaf, 16);
  EXPECT_DOUBLE_EQ(back.leaves.oversubscription, 2.5);
  const std::string head = R"({"format": "coll-topology-1", "nranks": 1, "hosts": [{"ranks": [0]}],
      "links": {"intra_host": {"alpha_us": 1, "beta_GBps": 1}, "inter_host": {"alpha_us": 5, "beta_GBps": 1}},
      "reduce": {"gamma_GBps": 15}, "fabric": )";
  struct Bad { const char* fabric; const char* field; };
  for (Bad b : {Bad{R"({"hosts_per_leaf": 2.5})", "fabric.hosts_per_leaf"},
                Bad{R"({"hosts_per_leaf": -1})", "fabric.hosts_per_leaf"},
                Bad{R"({"hosts_per_leaf": 1e10})", "got 1e+10"},
                Bad{R"({"hosts_per_leaf": "16"})", "fabric.hosts_per_leaf"},
                Bad{R"({"oversubscription": 0.5})", "fabric.oversubscription"},
                Bad{R"([16, 2])", "\"fabric\" must be an object"}}) {
    ASSERT_TRUE(Json::parse(head + b.fabric + "}", &j).isOk()) << b.fabric;
    Status st = fromJson(j, &back);
    EXPECT_NE(st.message().find(b.field), std::string::npos) << b.fabric << ": " << st.message();
  }
  ASSERT_TRUE(Json::parse(head + R"({"nics_per_host": 2, "hosts_per_leaf": 4})" + "}", &j).isOk());
  ASSERT_TRUE(fromJson(j, &back).isOk()) << "coll-sim's other keys are its own";
  EXPECT_EQ(back.leaves.hosts_per_leaf, 4);
  EXPECT_DOUBLE_EQ(back.leaves.oversubscription, 1);
}

TEST(TopologyJson, FileRoundTripAndBadFilesNameTheField) {
  std::string path = "/tmp/coll-topology-test-" + std::to_string(::getpid()) + ".json";
  ASSERT_TRUE(saveTopologyFile(path, twoByTwo()).isOk());
  Topology back;
  ASSERT_TRUE(loadTopologyFile(path, &back).isOk());
  EXPECT_EQ(back.numHosts(), 2);
  // Files from before the loaded step was kept apart from α lack it: 0, no contention.
  std::ofstream(path) << R"({"format": "coll-topology-1", "nranks": 2, "hosts": [{"ranks": [0, 1]}],
                             "links": {"intra_host": {"alpha_us": 1, "beta_GBps": 1},
                                       "inter_host": {"alpha_us": 60, "beta_GBps": 0.1}},
                             "reduce": {"gamma_GBps": 15}})";
  ASSERT_TRUE(loadTopologyFile(path, &back).isOk());
  EXPECT_EQ(back.loaded_step_s, 0);
  std::ofstream(path) << R"({"format": "coll-topology-1", "nranks": 3, "hosts": [{"ranks": [0, 1]}],
                             "links": {"intra_host": {"alpha_us": 1, "beta_GBps": 1}}})";
  Status st = loadTopologyFile(path, &back);
  EXPECT_NE(st.message().find("rank 2 is on no host"), std::string::npos) << st.message();
  std::ofstream(path) << R"({"format": "coll-topology-1", "nranks": 2, "hosts": [{"ranks": [0, 1]}],
                             "links": {"intra_host": {"alpha_us": 1, "beta_GBps": 0}}})";
  st = loadTopologyFile(path, &back);
  EXPECT_NE(st.message().find("links.intra_host"), std::string::npos) << st.message();
  std::remove(path.c_str());
  EXPECT_FALSE(loadTopologyFile(path, &back).isOk());
}

TEST(TopologyHash, IgnoresMeasuredLinksButNotLayout) {
  Topology a = twoByTwo(), b = twoByTwo();
  b.inter.alpha_s *= 2;
  EXPECT_EQ(a.layoutHash(), b.layoutHash()) << "a re-probe must find its tuning file";
  b.ranks_of_host = {{0, 2}, {1, 3}};
  EXPECT_NE(a.layoutHash(), b.layoutHash());
}

TEST(Tuning, LookupTakesTheNearestSizeWithinTheMeasuredRange) {
  select::TuningTable t;
  t.entries = {{algo::Collective::allreduce, 1024, "direct", 1e-4}, {algo::Collective::allreduce, 1 << 20, "ring", 1e-2}};
  EXPECT_EQ(t.lookup(algo::Collective::allreduce, 2048)->algorithm, "direct");
  EXPECT_EQ(t.lookup(algo::Collective::allreduce, 512 << 10)->algorithm, "ring");
  EXPECT_EQ(t.lookup(algo::Collective::allreduce, 8), nullptr) << "far below what was measured";
  EXPECT_EQ(t.lookup(algo::Collective::allreduce, 1 << 30), nullptr);
  EXPECT_EQ(t.lookup(algo::Collective::broadcast, 1024), nullptr);
  Json j;
  ASSERT_TRUE(Json::parse(select::toJson(t).dump(), &j).isOk());
  select::TuningTable back;
  ASSERT_TRUE(select::fromJson(j, &back).isOk());
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].algorithm, "ring");
  EXPECT_EQ(back.entries[1].bytes, size_t{1} << 20);
  EXPECT_NEAR(back.entries[0].measured_s, 1e-4, 1e-12);
}

TEST(Detector, FindsThisMachine) {
  HostHardware hw = detectHostHardware();
  EXPECT_GE(hw.numa_nodes, 1);
  EXPECT_EQ(hw.pus, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))) << "what nproc counts (source " << hw.source << ")";
  EXPECT_GE(hw.cores, 1);
  EXPECT_LE(hw.cores, hw.pus);
  EXPECT_FALSE(hw.hostname.empty());
  EXPECT_FALSE(hw.source.empty());
  for (const NicInfo& n : hw.nics) EXPECT_FALSE(n.pci.empty()) << n.name << ": only PCI NICs are hardware";
}

}  // namespace
}  // namespace coll::topology
