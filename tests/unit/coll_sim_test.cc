// coll-sim's engine (tools/sim): times that can be worked out by hand, the periodic shortcut
// against the exact simulation, broken schedules named, and bad clusters refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "algorithms/catalog.h"
#include "cluster_model.h"
#include "rate.h"
#include "sim_engine.h"

namespace coll::sim {
namespace {

ClusterModel cluster(int hosts, int per_host, const char* link = "1gbit", Fabric fabric = {}) {
  ClusterFlags f;
  f.hosts = hosts;
  f.per_host = per_host;
  std::string why;
  EXPECT_TRUE(parseRate(link, &f.link_wire_Bps, &why)) << why;
  f.fabric = fabric;
  ClusterModel m;
  Status st = clusterFromFlags(f, &m);
  EXPECT_TRUE(st) << st.message();
  return m;
}

SimRequest request(algo::Collective c, const char* algorithm, size_t bytes) {
  SimRequest q;
  q.collective = c;
  q.algorithm = algo::findAlgorithm(c, algorithm);
  q.bytes = bytes;
  return q;
}

SimResult run(const ClusterModel& m, const SimRequest& q) {
  SimResult r;
  Status st = simulate(m, q, &r);
  EXPECT_TRUE(st) << st.message();
  return r;
}

TEST(CollSim, OneMessageCostsSoftwareThenBytesThenAlpha) {
  const ClusterModel m = cluster(2, 1);
  SimRequest q = request(algo::Collective::broadcast, "direct", 8 << 20);
  q.in_place = true;  // no local copy on the root
  const SimResult r = run(m, q);
  // The sender's software time, the bytes, α, and the receiver's read of the last slice.
  const double expect = 2 * m.perMessageSeconds(true) + (8 << 20) / m.topo.inter.beta_Bps + m.topo.inter.alpha_s;
  EXPECT_NEAR(r.slowest_rank_s, expect, expect * 1e-9);
  EXPECT_EQ(r.messages, 16u);  // 512 KiB slices
  EXPECT_EQ(r.bytes_across_hosts, 8u << 20);
}

// Out of place, a ring all-gather's first sends also write the rank's own chunk into the
// output: between hosts the executor copies before sending, which the simulation charges to
// the sender; in place there is nothing to copy.
TEST(CollSim, AllgatherOwnChunkCopyIsChargedBetweenHosts) {
  const ClusterModel m = cluster(2, 1, "100gbit");
  SimRequest q = request(algo::Collective::allgather, "ring", 64 << 20);
  q.in_place = true;
  const double in_place = run(m, q).slowest_rank_s;
  q.in_place = false;
  const double out_of_place = run(m, q).slowest_rank_s;
  EXPECT_GT(out_of_place, in_place);
  EXPECT_LE(out_of_place, in_place + (32 << 20) / m.topo.intra.beta_Bps * 1.001);
}

TEST(CollSim, RingAllreduceReachesTheLinkBoundAndNotBeyond) {
  const ClusterModel m = cluster(4, 1);
  const size_t bytes = size_t{64} << 20;
  const SimResult r = run(m, request(algo::Collective::allreduce, "ring", bytes));
  const double bound = 2.0 * 3 / 4 * bytes / m.topo.inter.beta_Bps;
  EXPECT_GE(r.seconds, bound);
  EXPECT_LE(r.seconds, bound * 1.03);
}

TEST(CollSim, ABurstPassesAtThePeakRate) {
  Fabric f;
  f.burst_bytes = 128 << 10;
  const ClusterModel shaped = cluster(2, 1, "1gbit", f);
  SimRequest q = request(algo::Collective::broadcast, "direct", 64 << 10);
  q.in_place = true;
  const SimResult r = run(shaped, q);
  EXPECT_LT(r.slowest_rank_s, (64 << 10) / shaped.topo.inter.beta_Bps / 4);  // well under the shaped rate
  EXPECT_GE(r.slowest_rank_s, shaped.topo.inter.alpha_s);
}

// Ring, direct and hierarchical repeat every leaf: the periodic run (one leaf's ranks) gives
// the exact run's time, with a fraction of its steps. Direct's incast meets a FIFO link in an
// order that depends on how simultaneous events are broken, hence a few percent apart.
TEST(CollSim, PeriodicSimulationMatchesTheExactOne) {
  Fabric f;
  f.hosts_per_leaf = 2;
  f.oversubscription = 2;
  const ClusterModel m = cluster(8, 4, "100gbit", f);
  for (const char* algorithm : {"ring", "direct", "hierarchical"})
    for (size_t bytes : {size_t{4096}, size_t{65536}, size_t{4} << 20}) {
      SimRequest q = request(algo::Collective::allreduce, algorithm, bytes);
      const SimResult periodic = run(m, q);
      q.exact = true;
      const SimResult exact = run(m, q);
      SCOPED_TRACE(std::string(algorithm) + " " + std::to_string(bytes) + " B");
      EXPECT_EQ(periodic.simulated_ranks, 8);
      EXPECT_EQ(exact.simulated_ranks, 32);
      EXPECT_NEAR(periodic.seconds, exact.seconds, exact.seconds * (algorithm == std::string("direct") ? 0.03 : 1e-9));
      EXPECT_EQ(periodic.messages, exact.messages);
      EXPECT_EQ(periodic.bytes_across_hosts, exact.bytes_across_hosts);
    }
}

TEST(CollSim, TreesAndRootsAreSimulatedExactly) {
  const ClusterModel m = cluster(8, 4, "100gbit");
  const SimResult tree = run(m, request(algo::Collective::allreduce, "tree", 1 << 20));
  EXPECT_EQ(tree.simulated_ranks, 32);
  EXPECT_NE(tree.how.find("exact"), std::string::npos) << tree.how;
  const SimResult chain = run(m, request(algo::Collective::broadcast, "chain", 1 << 20));
  EXPECT_EQ(chain.simulated_ranks, 32);
}

TEST(CollSim, BackToBackRunsAreTimedPerOp) {
  const ClusterModel m = cluster(4, 1);
  SimRequest q = request(algo::Collective::allreduce, "ring", 16 << 20);
  const SimResult one = run(m, q);
  q.iters = 4;
  q.warmup = 1;
  const SimResult four = run(m, q);
  EXPECT_NEAR(four.seconds, one.seconds, one.seconds * 0.05);  // link-bound: each op as long as one alone
}

// Fabric::per_op_s is each rank's software time between one op and the next: back-to-back
// broadcasts of 8 B, bound by that and not by the link, take it longer per op on every rank.
TEST(CollSim, EachOpCostsEveryRankItsSoftwareTime) {
  Fabric slow;
  slow.per_op_s = 50e-6;
  SimRequest q = request(algo::Collective::broadcast, "direct", 8);
  q.in_place = true;
  q.iters = 20;
  q.warmup = 2;
  const SimResult base = run(cluster(2, 1), q), with = run(cluster(2, 1, "1gbit", slow), q);
  EXPECT_NEAR(with.seconds - base.seconds, slow.per_op_s, slow.per_op_s * 0.02);
  EXPECT_NEAR(with.slowest_rank_s - base.slowest_rank_s, slow.per_op_s, slow.per_op_s * 0.02);
}

// Where the loaded step exceeds α (ranks queue for cores), half of it is each end's software
// time and the wire's α is latency: one 8 B message across hosts costs the loaded step plus α
// (a flag's α is the wire's), and three messages into one rank at once queue on its thread, so
// a direct all-reduce (3 into each rank, twice) costs about 3 loaded steps a phase where
// recursive doubling's 2 steps cost one each (netcluster 4 x 1: a median 2.1 x,
// docs/SIMULATOR.md).
ClusterModel loadedCluster(int hosts, double loaded_step_s) {
  ClusterFlags f;
  f.hosts = hosts;
  f.inter_alpha_s = 5e-6;  // an idle ping-pong's, as netcluster's probe gives
  f.loaded_step_s = loaded_step_s;
  ClusterModel m;
  Status st = clusterFromFlags(f, &m);
  EXPECT_TRUE(st) << st.message();
  return m;
}

TEST(CollSim, ALoadedStepIsEachEndsSoftwareWhereRanksQueueForCores) {
  const ClusterModel m = loadedCluster(2, 40e-6);
  EXPECT_DOUBLE_EQ(m.perMessageSeconds(true), 20e-6);
  EXPECT_DOUBLE_EQ(m.latencySeconds(true), m.topo.inter.alpha_s);
  EXPECT_DOUBLE_EQ(m.idlePerMessageSeconds(true), m.topo.inter.alpha_s / 4);  // a ping-pong's
  SimRequest q = request(algo::Collective::broadcast, "direct", 8);
  q.in_place = true;
  const SimResult one = run(m, q);
  EXPECT_NEAR(one.slowest_rank_s, 40e-6 + 8 / m.topo.inter.beta_Bps + m.topo.inter.alpha_s, 1e-9);

  const ClusterModel four = loadedCluster(4, 40e-6);
  const double direct = run(four, request(algo::Collective::allreduce, "direct", 512)).seconds;
  const double rd = run(four, request(algo::Collective::allreduce, "rd", 512)).seconds;
  EXPECT_GT(direct, 2 * rd);
}

// Inside a host too each end pays half the loaded step (the reader queues for a core as a
// socket's does), and from a topology file, whose α is a ping-pong's, the latency is what is
// left of α without the idle ends' software the ping-pong held: 2 across hosts, 1 inside.
TEST(CollSim, AContendedMessageCostsEachEndHalfTheLoadedStepPlusTheWiresAlpha) {
  ClusterFlags f;
  f.hosts = 2;
  f.per_host = 2;
  f.inter_alpha_s = 5e-6;  // an idle ping-pong's, as netcluster's probe gives
  f.loaded_step_s = 40e-6;
  ClusterModel m;
  ASSERT_TRUE(clusterFromFlags(f, &m));
  EXPECT_DOUBLE_EQ(m.receiveSeconds(false), 20e-6);
  EXPECT_DOUBLE_EQ(m.latencySeconds(false), m.topo.intra.alpha_s);
  // One host: an 8 B broadcast costs the loaded step where an idle host's cost the sender's α / 4.
  SimRequest q = request(algo::Collective::broadcast, "direct", 8);
  q.in_place = true;
  f.hosts = 1;
  ClusterModel host;
  ASSERT_TRUE(clusterFromFlags(f, &host));
  const SimResult idle = run(cluster(1, 2), q), loaded = run(host, q);
  EXPECT_NEAR(loaded.slowest_rank_s - idle.slowest_rank_s, 40e-6 - m.idlePerMessageSeconds(false), 1e-9);

  ClusterModel file = m;
  file.from_file = true;
  EXPECT_DOUBLE_EQ(file.latencySeconds(true), file.topo.inter.alpha_s / 2);
  EXPECT_DOUBLE_EQ(file.latencySeconds(false), file.topo.intra.alpha_s * 3 / 4);
  file.topo.loaded_step_s = 0;  // idle: α as probed, and a shared-memory reader only copies
  EXPECT_DOUBLE_EQ(file.latencySeconds(true), file.topo.inter.alpha_s);
  EXPECT_DOUBLE_EQ(file.receiveSeconds(false), 0);
}

// Without a loaded step above α nothing changes: α / 4 a message, α as latency.
TEST(CollSim, AnIdleClusterKeepsItsQuarterAlphaPerMessage) {
  const ClusterModel m = loadedCluster(2, 0);
  EXPECT_DOUBLE_EQ(m.perMessageSeconds(true), m.topo.inter.alpha_s / 4);
  EXPECT_DOUBLE_EQ(m.latencySeconds(true), m.topo.inter.alpha_s);
}

// One host, a chain broadcast of 64 MiB in back-to-back runs: the root's sends are done only as
// its reader drains the shared-memory ring, and the reader takes each run's bytes at intra β,
// so the root's time per op is the reader's. With no ring (0: a sender never waits) the root
// would be done at once and the mean over ranks half of that.
TEST(CollSim, ASenderInsideAHostWaitsForItsReaderBeyondTheRing) {
  Fabric ring;  // 1 MiB, coll's 8 slots of 128 KiB
  Fabric none;
  none.shm_ring_bytes = 0;
  SimRequest q = request(algo::Collective::broadcast, "chain", 64 << 20);
  q.in_place = true;
  q.iters = 4;
  q.warmup = 1;
  const ClusterModel with = cluster(1, 2, "1gbit", ring), without = cluster(1, 2, "1gbit", none);
  const SimResult waits = run(with, q), free = run(without, q);
  const double read = (64 << 20) / with.topo.intra.beta_Bps;
  EXPECT_NEAR(waits.seconds, read, read * 0.05);
  EXPECT_NEAR(free.seconds, read / 2, read * 0.05);
}

// The ring is slots, and a message takes whole ones however small: on one host with ranks
// queueing for cores (each end half the loaded step, e), a chain broadcast of 8 B has its middle
// rank receive and send (2e an op) while the root only sends (e). With the ring counted in
// bytes the root would be done with 40 ops at 40e; with 8 slots it stays at most 8 messages
// ahead of its reader and is done 8 ops before it.
TEST(CollSim, ASmallMessageTakesAWholeSlotOfTheRing) {
  EXPECT_DOUBLE_EQ(Fabric{}.shmRingBytesOf(8), 131072);
  EXPECT_DOUBLE_EQ(Fabric{}.shmRingBytesOf(131072), 2 * 131072);  // past the slot's header
  ClusterFlags f;
  f.hosts = 1;
  f.per_host = 3;
  f.loaded_step_s = 40e-6;
  ClusterModel m;
  ASSERT_TRUE(clusterFromFlags(f, &m));
  SimRequest q = request(algo::Collective::broadcast, "chain", 8);
  q.in_place = true;
  q.iters = 40;
  const double e = m.perMessageSeconds(false), n = q.iters;
  const double root = (n - Fabric::kShmSlots) * 2 * e, reader = n * 2 * e;
  EXPECT_NEAR(run(m, q).seconds * n, (root + 2 * reader) / 3, reader * 0.05);
}

// coll's reducing receives keep the ring's slots: the sender copies each message in and the
// receiver reduces it out, both on the ranks' own progress threads. A ring all-reduce of 2 ranks
// on one host (γ = β) then costs every rank four passes over half the buffer (copy in and reduce
// out, copy in and copy out), twice what a single-copy transport (no ring modelled) would.
TEST(CollSim, ASenderInsideAHostCopiesIntoTheRingForAReducingOp) {
  Fabric none;
  none.shm_ring_bytes = 0;
  ClusterModel with = cluster(1, 2, "1gbit"), without = cluster(1, 2, "1gbit", none);
  with.topo.gamma_Bps = with.topo.intra.beta_Bps;
  without.topo.gamma_Bps = without.topo.intra.beta_Bps;
  SimRequest q = request(algo::Collective::allreduce, "ring", 64 << 20);
  q.iters = 2;
  const double pass = (64 << 20) / with.topo.intra.beta_Bps;  // two halves, once each
  EXPECT_NEAR(run(with, q).seconds, 2 * pass, pass * 0.1);
  EXPECT_NEAR(run(without, q).seconds, pass, pass * 0.1);
}

// An all-gather's ranks both send and receive and reduce nothing: busy senders, whose messages
// of 256 KiB and more are read by CMA. A rank of 3 then copies its own chunk to its output and
// reads the two others into it, and forwards the one it received without copying it again.
TEST(CollSim, ABusySendersLargeMessagesAreReadWithoutItsCopy) {
  const ClusterModel m = cluster(1, 3, "1gbit");
  SimRequest q = request(algo::Collective::allgather, "ring", 48 << 20);
  q.iters = 2;
  const double pass = (48 << 20) / m.topo.intra.beta_Bps;  // the whole output, once per rank
  EXPECT_NEAR(run(m, q).seconds, pass, pass * 0.1);
}

// Where ranks queue for cores (a loaded step above α) every sender's large messages are read by
// CMA, as coll's timing of its two ways finds them faster there: a direct broadcast's root on
// a host of 3 then copies nothing, and its two readers each take one pass, at once. With cores
// to spare the root copies into both rings, two passes on its thread.
TEST(CollSim, WhereRanksQueueForCoresARootsLargeMessagesAreReadWithoutItsCopy) {
  auto host = [](double loaded_step_s) {
    ClusterFlags f;
    f.hosts = 1;
    f.per_host = 3;
    f.loaded_step_s = loaded_step_s;
    ClusterModel m;
    EXPECT_TRUE(clusterFromFlags(f, &m));
    return m;
  };
  const ClusterModel contended = host(6e-6), spare = host(0);
  ASSERT_TRUE(contended.contended(false));
  ASSERT_FALSE(spare.contended(false));
  SimRequest q = request(algo::Collective::broadcast, "direct", 64 << 20);
  q.in_place = true;
  q.iters = 2;
  const double pass = (64 << 20) / spare.topo.intra.beta_Bps;
  EXPECT_NEAR(run(contended, q).seconds, pass, pass * 0.2);
  EXPECT_NEAR(run(spare, q).seconds, 2 * pass, pass * 0.2);
}

// Builders that break the schedules' rules, to prove the engine names what went wrong.
algo::Schedule unmatchedSends(const algo::BuildParams& p) {
  algo::Schedule s;
  s.algorithm = "unmatched";
  for (int i = 0; i < (p.rank == 0 ? 2 : 1); ++i)
    s.steps.push_back({p.rank == 0 ? algo::StepKind::send : algo::StepKind::recv, algo::BufferId::output, 1 - p.rank, 0, 64});
  return s;
}

algo::Schedule receiveBeforeSending(const algo::BuildParams& p) {
  algo::Schedule s;
  s.algorithm = "deadlock";
  s.steps.push_back({algo::StepKind::recv, algo::BufferId::output, 1 - p.rank, 0, 64});
  algo::Step send{algo::StepKind::send, algo::BufferId::output, 1 - p.rank, 64, 64};
  send.deps = {0};
  s.steps.push_back(send);
  return s;
}

TEST(CollSim, BrokenSchedulesAreNamed) {
  const ClusterModel m = cluster(2, 1);
  const algo::AlgorithmInfo unmatched{algo::Collective::allreduce, "unmatched", "a broken schedule", unmatchedSends, nullptr};
  const algo::AlgorithmInfo deadlock{algo::Collective::allreduce, "deadlock", "a broken schedule", receiveBeforeSending, nullptr};
  SimRequest q = request(algo::Collective::allreduce, "ring", 64);
  SimResult r;
  q.algorithm = &unmatched;
  Status st = simulate(m, q, &r);
  EXPECT_EQ(st.code(), ErrorCode::Internal);
  EXPECT_NE(st.message().find("2 sends but 1 receives"), std::string::npos) << st.message();
  q.algorithm = &deadlock;
  st = simulate(m, q, &r);
  EXPECT_EQ(st.code(), ErrorCode::Internal);
  EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("rank 0 waits in step 0"), std::string::npos) << st.message();
}

TEST(CollSim, WhatCannotFitIsRefusedWithTheEstimate) {
  const ClusterModel m = cluster(512, 8, "100gbit");
  SimRequest q = request(algo::Collective::allreduce, "rd", size_t{256} << 20);
  q.max_memory_bytes = 64 << 20;
  SimResult r;
  const Status st = simulate(m, q, &r);
  EXPECT_EQ(st.code(), ErrorCode::Unsupported);
  EXPECT_NE(st.message().find("beyond the memory limit"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("million steps"), std::string::npos) << st.message();
}

TEST(CollSimInput, RatesInTcSyntax) {
  double bps = 0;
  std::string why;
  ASSERT_TRUE(parseRate("1gbit", &bps, &why));
  EXPECT_DOUBLE_EQ(bps, 125e6);
  ASSERT_TRUE(parseRate("500mbit", &bps, &why));
  EXPECT_DOUBLE_EQ(bps, 62.5e6);
  ASSERT_TRUE(parseRate("2gbps", &bps, &why));
  EXPECT_DOUBLE_EQ(bps, 2e9);
  EXPECT_FALSE(parseRate("0gbit", &bps, &why));
  EXPECT_NE(why.find("greater than zero"), std::string::npos) << why;
  EXPECT_FALSE(parseRate("10qbit", &bps, &why));
  EXPECT_NE(why.find("unknown unit"), std::string::npos) << why;
  EXPECT_FALSE(parseRate("fast", &bps, &why));
}

TEST(CollSimInput, ClusterFlagsAreChecked) {
  ClusterFlags f;
  f.per_host = 2;
  f.ranks = 7;
  ClusterModel m;
  Status st = clusterFromFlags(f, &m);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("must divide"), std::string::npos) << st.message();
  f = {};
  f.fabric.oversubscription = 0.5;
  st = clusterFromFlags(f, &m);
  EXPECT_NE(st.message().find("fabric.oversubscription must be >= 1"), std::string::npos) << st.message();
}

std::string writeFile(const std::string& text) {
  char path[] = "/tmp/coll-sim-test-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(CollSimInput, TopologyFilesAreCheckedFieldByField) {
  const std::string head = R"({"format": "coll-topology-1", "nranks": 4, "hosts": [{"ranks": [0, 1]}, {"ranks": [2, 3]}],)";
  const std::string links = R"("links": {"intra_host": {"alpha_us": 2, "beta_GBps": 10}, "inter_host": {"alpha_us": 20, "beta_GBps": 0.12}},)";
  const std::string reduce = R"("reduce": {"gamma_GBps": 15})";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {head + links + reduce + "}", ""},
      {head + R"("links": {"intra_host": {"alpha_us": 2, "beta_GBps": 10}, "inter_host": {"alpha_us": 20, "beta_GBps": 0}},)" + reduce + "}",
       "links.inter_host needs alpha_us >= 0 and beta_GBps > 0"},
      {R"({"format": "coll-topology-1", "nranks": 5, "hosts": [{"ranks": [0, 1]}, {"ranks": [2, 3]}],)" + links + reduce + "}",
       "rank 4 is on no host"},
      {head + links + reduce + R"(, "fabric": {"hosts_per_leaf": 1.5})" + "}", "fabric.hosts_per_leaf must be an integer"},
      {head + links + reduce + R"(, "fabric": {"oversubscription": 0})" + "}", "fabric.oversubscription must be >= 1"},
      {head + links + reduce + R"(, "fabric": {"nics_per_host": 0})" + "}", "fabric.nics_per_host must be >= 1"},
      {head + links + reduce + R"(, "fabric": {"shm_ring_bytes": -1})" + "}", "fabric.shm_ring_bytes must be 0"},
      {head + links + reduce + R"(, "fabric": {"per_op_us": -2})" + "}", "fabric.per_op_us must be >= 0"},
      {head + links + reduce + R"(, "fabric": [1])" + "}", "\"fabric\" must be an object"},
      {head + links, "offset"},
  };
  for (const Case& c : cases) {
    const std::string path = writeFile(c.text);
    ClusterModel m;
    const Status st = clusterFromFile(path, ClusterFlags{}, {}, &m);
    std::remove(path.c_str());
    if (c.expect.empty()) {
      EXPECT_TRUE(st) << st.message();
      EXPECT_EQ(m.host_of[3], 1);
      continue;
    }
    EXPECT_FALSE(st) << c.text;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace coll::sim
