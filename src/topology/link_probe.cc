#include "topology/link_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "algorithms/patterns/ring.h"
#include "algorithms/schedule_builder.h"
#include "base/log.h"
#include "base/wire_tag.h"
#include "reduce/reduce.h"

namespace coll::topology {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSmall = 8;
constexpr size_t kGammaBytes = 2 << 20;  // the reduction kernel's timed sum (measureReduceBandwidth)

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Initiator: send `bytes`, then receive 8 B back. Responder: receive, then answer 8 B.
algo::Schedule pingSchedule(bool initiator, int peer, size_t bytes) {
  algo::ScheduleBuilder b("probe", 2);
  using algo::StepKind;
  using algo::BufferId;
  if (initiator) {
    b.add({StepKind::send, BufferId::input, peer, 0, bytes, 0, 0}, {0}, {});
    b.add({StepKind::recv, BufferId::output, peer, 0, kSmall, 0, 1}, {}, {1});
  } else {
    b.add({StepKind::recv, BufferId::output, peer, 0, bytes, 0, 0}, {}, {0});
    b.add({StepKind::send, BufferId::output, peer, 0, kSmall, 0, 1}, {0}, {});  // after the receive
  }
  return b.finish();
}

struct PairProbe {
  const ProbeContext& ctx;
  bool initiator;
  int peer;
  uint64_t sequence = 0;  // tags the probe's messages apart from each other
  std::vector<char> in = std::vector<char>(kProbeLargeBytes), out = std::vector<char>(kProbeLargeBytes);

  Status once(size_t bytes, double* seconds) {
    ExecContext ec;
    ec.ops.push_back({in.data(), out.data(), wireTag(sequence++, kProbeWireKind)});
    ec.type = DataType::u8;
    ec.nranks = 0;  // set by run()
    auto t0 = Clock::now();
    Status st = ctx.run(pingSchedule(initiator, peer, bytes), ec);
    *seconds = secondsSince(t0);
    if (!st) return Status(st.code(), format("link probe with rank %d: %s", peer, st.message().c_str()), peer);
    return st;
  }

  // The initiator's figures; the responder only answers (its timings mean nothing). α is
  // the round trip of rank `which` (0 = fastest) of the kProbePingPongs, halved.
  Status measure(LinkParams* link, int which) {
    std::vector<double> rtt(kProbePingPongs);
    for (double& t : rtt) COLL_RETURN_IF_ERROR(once(kSmall, &t));
    std::nth_element(rtt.begin(), rtt.begin() + which, rtt.end());
    link->alpha_s = rtt[static_cast<size_t>(which)] / 2;
    // Always two transfers: both ranks of the pair run this, and a count decided from each
    // side's own timing could differ (one would wait for a transfer the other never sends).
    double best = 0, again = 0;
    COLL_RETURN_IF_ERROR(once(kProbeLargeBytes, &best));
    COLL_RETURN_IF_ERROR(once(kProbeLargeBytes, &again));
    best = std::min(best, again);
    if (initiator && ctx.release_buffers) ctx.release_buffers(peer);  // answered: the peer read it all
    link->beta_Bps = kProbeLargeBytes / std::max(best - 2 * link->alpha_s, best * 0.05);
    link->source = "probe";
    return Status::ok();
  }
};

std::string encode(const LinkParams& l) { return format("%.9g %.9g", l.alpha_s, l.beta_Bps); }

bool decode(const std::string& s, LinkParams* l) {
  return std::sscanf(s.c_str(), "%lg %lg", &l->alpha_s, &l->beta_Bps) == 2 && l->beta_Bps > 0;
}

// Which of the sorted round trips gives α. Inside a host, the median. Across hosts, the lower
// quartile: there the idle ping-pong came out bimodal from start-up to start-up on the same
// simulated links (median 6-7 us or 30-35 us, at times 113-155 us, docs/perf/selector_*.log at 85c8cba;
// likely a peer asleep between ping-pongs), while steps of a busy job did not move with it.
// The lower quartile keeps the link's and the executor's time as long as a quarter of the
// round trips find the peer awake. The intra-host figure is steadier (1.4-1.9 us in 12 of 14
// start-ups on netcluster 2 x 2, 6-8 in the others, 2026-12-06) and keeps the median, so
// one-host jobs see the figures they did.
constexpr int kIntraQuantile = kProbePingPongs / 2;
constexpr int kInterQuantile = kProbePingPongs / 4;

// Runs the probe of one link class when this rank is in its pair, then everyone reads it.
Status probeClass(const ProbeContext& ctx, const char* name, int a, int b, int which, LinkParams* link) {
  const std::string key = ctx.key_prefix + "topo/probe/" + name;
  if (ctx.rank == a || ctx.rank == b) {
    PairProbe probe{ctx, ctx.rank == a, ctx.rank == a ? b : a};
    LinkParams measured;
    COLL_RETURN_IF_ERROR(probe.measure(&measured, which));
    if (ctx.rank == a) COLL_RETURN_IF_ERROR(ctx.store->set(key, encode(measured), ctx.deadline));
  }
  std::string value;
  COLL_RETURN_IF_ERROR(ctx.store->get(key, &value, ctx.deadline));
  LinkParams agreed;
  if (!decode(value, &agreed)) return internalError("link probe: malformed " + key + ": " + value);
  agreed.source = format("probe (ranks %d-%d)", a, b);
  *link = agreed;
  COLL_INFO("TOPO", "link %s: alpha %.1f us, beta %.3f GB/s (ranks %d and %d)", name, link->alpha_s * 1e6,
            link->beta_Bps / 1e9, a, b);
  return Status::ok();
}

// The loaded step, measured as an op pays it: kLoadedStepRuns runs of the chained schedule
// (loadedStepSchedule), after one untimed run that lines the ranks up (they leave the store
// exchanges before it up to milliseconds apart, and a chained run's first rank to start would
// count the wait for the last; after a chained run they finish within about a step of each
// other). Each rank's figure is loadedStepFromRuns of its timed runs; the largest is agreed
// through the store (rank 0 reads every rank's, the others one key: O(n) store requests): an
// op's step ends when its slowest participant's does, and in a chain the ranks' totals differ
// only by where each started and finished waiting, so the largest is the op's duration.
// The probe before timed 16 separate one-round ops (no reduction, no chaining: the median
// round of each rank, the slowest rank's agreed): on the simulated cluster it gave 5.4-15.7 us
// on 2 x 2 and 17.5-28.9 on 4 x 2 (docs/perf/selector_*_final.log at 741ac63; 12-54 earlier)
// where a ring all-reduce of 32-512 B took 13.5-14.4 and 27.8-31.0 us a step
// (selector_measured_test.cc).
Status probeLoadedStep(const ProbeContext& ctx, int nranks, double* seconds) {
  const algo::Schedule schedule = loadedStepSchedule(ctx.rank, nranks, kLoadedStepRounds);
  std::vector<float> buffer((kLoadedStepRounds + 1) * kSmall / sizeof(float));  // in place, zeros: sums stay 0
  std::vector<double> runs;
  for (int r = 0; r <= kLoadedStepRuns; ++r) {
    ExecContext ec;
    ec.ops.push_back({buffer.data(), buffer.data(), wireTag(static_cast<uint64_t>(r), kProbeShiftWireKind)});
    ec.type = DataType::f32;
    ec.op = ReduceOp::sum;
    auto t0 = Clock::now();
    Status st = ctx.run(schedule, ec);
    if (r > 0) runs.push_back(secondsSince(t0));  // run 0 lines the ranks up
    if (!st) return Status(st.code(), format("link probe (ring shift): %s", st.message().c_str()), st.peer());
  }
  const std::string key = ctx.key_prefix + "topo/probe/loaded_step/";
  COLL_RETURN_IF_ERROR(ctx.store->set(key + std::to_string(ctx.rank),
                                      format("%.9g", loadedStepFromRuns(runs, kLoadedStepRounds)), ctx.deadline));
  if (ctx.rank == 0) {  // the slowest rank's figure sets the pace; rank 0 alone reads them all
    double slowest = 0;
    for (int r = 0; r < nranks; ++r) {
      std::string value;
      COLL_RETURN_IF_ERROR(ctx.store->get(key + std::to_string(r), &value, ctx.deadline));
      slowest = std::max(slowest, std::atof(value.c_str()));
    }
    COLL_RETURN_IF_ERROR(ctx.store->set(key + "agreed", format("%.9g", slowest), ctx.deadline));
  }
  std::string agreed;
  COLL_RETURN_IF_ERROR(ctx.store->get(key + "agreed", &agreed, ctx.deadline));
  *seconds = std::atof(agreed.c_str());
  return Status::ok();
}

// Each host's first rank measures the kernel; the slowest host's figure is what all use.
// Rank 0 reads the leaders' figures and publishes the slowest; the others read that one key.
Status agreeGamma(const ProbeContext& ctx, Topology* topo) {
  const std::string key = ctx.key_prefix + "topo/gamma/";
  const auto& hosts = topo->ranks_of_host;
  for (size_t h = 1; h < hosts.size(); ++h)
    if (hosts[h].front() == ctx.rank)
      COLL_RETURN_IF_ERROR(ctx.store->set(key + std::to_string(h), format("%.9g", measureReduceBandwidth()), ctx.deadline));
  if (ctx.rank == 0) {  // rank 0 leads host 0
    double gamma = measureReduceBandwidth();
    for (size_t h = 1; h < hosts.size(); ++h) {
      std::string v;
      COLL_RETURN_IF_ERROR(ctx.store->get(key + std::to_string(h), &v, ctx.deadline));
      double g = std::atof(v.c_str());
      if (g > 0 && (gamma <= 0 || g < gamma)) gamma = g;
    }
    COLL_RETURN_IF_ERROR(ctx.store->set(key + "agreed", format("%.9g", gamma), ctx.deadline));
  }
  std::string agreed;
  COLL_RETURN_IF_ERROR(ctx.store->get(key + "agreed", &agreed, ctx.deadline));
  const double gamma = std::atof(agreed.c_str());
  if (gamma > 0) {
    topo->gamma_Bps = gamma;
    topo->gamma_source = "probe (reduceInto f32 sum of 2 MiB, slowest host)";
  }
  return Status::ok();
}

}  // namespace

// Round k sends region k (8 B) right and receives-and-reduces region k + 1 from the left;
// round k + 1 sends region k + 1, so its send waits for round k's receive and reduction (the
// builder's read-after-write hazard), as a ring all-reduce's step s + 1 sends the chunk step
// s reduced. Every region and scratch slot is used once, so the receives have no
// dependencies and are posted at once, as the ring's are.
algo::Schedule loadedStepSchedule(int rank, int nranks, int rounds) {
  algo::ScheduleBuilder b("probe-shift", static_cast<size_t>(rounds) + 1);
  if (nranks < 2 || rounds < 1) return b.finish();
  const int right = algo::ring::right(rank, nranks), left = algo::ring::left(rank, nranks);
  for (int k = 0; k < rounds; ++k) {
    const auto region = static_cast<size_t>(k);
    const auto phase = static_cast<uint32_t>(k);
    b.add({algo::StepKind::send, algo::BufferId::output, right, region * kSmall, kSmall, 0, phase}, {region}, {});
    b.add({algo::StepKind::recvReduce, algo::BufferId::output, left, (region + 1) * kSmall, kSmall, region * kSmall,
           phase},
          {region + 1}, {region + 1});
  }
  b.setScratchBytes(static_cast<size_t>(rounds) * kSmall);
  b.setNumPhases(static_cast<uint32_t>(rounds));
  return b.finish();
}

double loadedStepFromRuns(std::vector<double> run_seconds, int rounds) {
  if (run_seconds.empty() || rounds < 1) return 0;
  const size_t mid = run_seconds.size() / 2;
  std::nth_element(run_seconds.begin(), run_seconds.begin() + static_cast<std::ptrdiff_t>(mid), run_seconds.end());
  return run_seconds[mid] / rounds;
}

double measureReduceBandwidth() {
  std::vector<float> dst(kGammaBytes / sizeof(float), 1.0f), src(kGammaBytes / sizeof(float), 2.0f);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    reduce::reduceInto(dst.data(), src.data(), dst.size(), DataType::f32, ReduceOp::sum);
    double t = secondsSince(t0);
    if (best == 0 || t < best) best = t;
  }
  return static_cast<double>(kGammaBytes) / std::max(best, 1e-9);
}

Status probeLinks(const ProbeContext& ctx, Topology* topo) {
  auto t0 = Clock::now();
  for (const auto& host : topo->ranks_of_host)
    if (host.size() >= 2) {
      COLL_RETURN_IF_ERROR(probeClass(ctx, "intra_host", host[0], host[1], kIntraQuantile, &topo->intra));
      break;
    }
  if (topo->numHosts() > 1)
    COLL_RETURN_IF_ERROR(probeClass(ctx, "inter_host", topo->ranks_of_host[0].back(), topo->ranks_of_host[1].front(),
                                    kInterQuantile, &topo->inter));
  // Kept apart from the idle α (the cost model charges the excess per message of the job, not
  // per step): the ring crosses hosts where there are several, so it is the inter-host class's.
  COLL_RETURN_IF_ERROR(probeLoadedStep(ctx, topo->nranks, &topo->loaded_step_s));
  COLL_INFO("TOPO", "loaded step (%d chained ring-shift rounds of 8 B, every rank at once): %.1f us",
            kLoadedStepRounds, topo->loaded_step_s * 1e6);
  COLL_RETURN_IF_ERROR(agreeGamma(ctx, topo));
  COLL_INFO("TOPO", "probe took %.1f ms; gamma %.2f GB/s", secondsSince(t0) * 1e3, topo->gamma_Bps / 1e9);
  return Status::ok();
}

}  // namespace coll::topology
