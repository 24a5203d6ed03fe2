#include "sim_options.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "perf_options.h"
#include "rate.h"

namespace coll::sim {
namespace {

bool parseInt(const char* text, int lo, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end || v < lo || v > (1 << 30)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseDouble(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && !*end;
}

struct TypeName {
  const char* name;
  size_t bytes;
};
constexpr TypeName kTypes[] = {{"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8},
                               {"uint64", 8}, {"half", 2}, {"bfloat16", 2}, {"float", 4}, {"double", 8}};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

std::string simUsage() {
  return "usage: coll-sim [options]\n"
         "  Runs the schedules coll builds on a modelled cluster and prints all_reduce_perf's table.\n"
         "  sizes:      -b MIN -e MAX (8, 256M) -f FACTOR (2) | -i STEP\n"
         "  op:         -c, --collective NAME (allreduce; broadcast, reduce, allgather, reducescatter, alltoall,\n"
         "              gather, scatter)  -d TYPE (float)  -r ROOT (0)  --in-place\n"
         "  algorithms: --algo NAME[,NAME] | all (default: the selector's choice at each size)\n"
         "  cluster:    --topology FILE (coll-topo --json; optional \"fabric\" object), or\n"
         "              --hosts H --per-host R [--ranks N] --link RATE (tc syntax: 1gbit, 100gbit; 1gbit)\n"
         "              --goodput F (0.956: TCP payload per frame)  --inter-alpha-us A (60)  --intra-alpha-us A (2.5)\n"
         "              --intra-GBps B (10.1)  --gamma-GBps G (15.1)  --loaded-step-us S (0)\n"
         "  fabric:     --nics N (1)  --hosts-per-leaf K (0: one switch)  --oversubscription X (1)\n"
         "              --host-memory-GBps M (0: no shared limit)  --per-message-us O (α / 4 of the link class)\n"
         "              --per-op-us P (0: each rank's software time between one op and the next)\n"
         "              --burst BYTES (NICs shaped by a token bucket, as netcluster's tbf: 128K; 0: none)\n"
         "              --send-buffer BYTES (832K: the send buffers of a peer's sockets; a send is done once the rest fits)\n"
         "              --shm-ring BYTES (1M: inside a host, a send is done once the rest fits the ring of 8 slots,\n"
         "              a message taking whole ones; 0: at once)\n"
         "              (with --topology, these and --link override the file's)\n"
         "  schedule:   --slice BYTES (512K)  --depth N (8)\n"
         "  runs:       -n ITERS (1) -w WARMUP (0): back-to-back ops per rank, timed as all_reduce_perf does\n"
         "  speed:      --exact (simulate every rank even where the job repeats in blocks: docs/SIMULATOR.md)\n"
         "              --max-memory BYTES (4G): refuse a simulation estimated to need more\n"
         "  start-up:   --startup: model launch to the first all-reduce and the memory per rank instead\n"
         "              --cores N (0: a core a rank)  --spawn-ms S (1.3)  --host-launch-ms S (100)\n"
         "              --store-request-us S (12)  --switch-us S (25: an oversubscribed rank's turn)\n"
         "              --cpu-scale F (1): every CPU time above and in the model times F (a slower or faster machine)\n"
         "              --startup-plan R,R,...: each rank's store requests per phase, hosts of R ranks\n"
         "  output:     --stats (steps, messages, memory and wall time per row)  --csv FILE\n";
}

ParseOutcome parseSimOptions(int argc, char** argv, SimOptions* o, std::string* error) {
  auto given = [o](const char* field) { o->fabric_given.push_back(field); };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return ParseOutcome::help;
    if (a == "--in-place") { o->in_place = true; continue; }
    if (a == "--stats") { o->stats = true; continue; }
    if (a == "--exact") { o->exact = true; continue; }
    if (a == "--startup") { o->startup = true; continue; }
    if (i + 1 >= argc) return *error = a + " needs a value (or is unknown; see --help)", ParseOutcome::error;
    const char* v = argv[++i];
    bool ok = true;
    double d = 0;
    if (a == "-b") ok = bench::parseSize(v, &o->min_bytes);
    else if (a == "-e") ok = bench::parseSize(v, &o->max_bytes);
    else if (a == "-f") { int f = 0; ok = parseInt(v, 1, &f); o->step_factor = static_cast<size_t>(f); }
    else if (a == "-i") { ok = bench::parseSize(v, &o->step_bytes) && o->step_bytes > 0; o->step_factor = 1; }
    else if (a == "-c" || a == "--collective") ok = algo::parseCollective(v, &o->collective);
    else if (a == "-r") ok = parseInt(v, 0, &o->root);
    else if (a == "-n") ok = parseInt(v, 1, &o->iters);
    else if (a == "-w") ok = parseInt(v, 0, &o->warmup);
    else if (a == "-d") {
      ok = false;
      for (const TypeName& t : kTypes)
        if (!std::strcmp(v, t.name)) ok = true, o->elem_size = t.bytes, o->type_name = t.name;
    }
    else if (a == "--algo") o->algos = splitList(v);
    else if (a == "--topology") o->topology_file = v;
    else if (a == "--hosts") ok = parseInt(v, 1, &o->cluster.hosts);
    else if (a == "--per-host") ok = parseInt(v, 1, &o->cluster.per_host);
    else if (a == "--ranks") ok = parseInt(v, 1, &o->cluster.ranks);
    else if (a == "--link") {
      std::string why;
      if (!parseRate(v, &o->cluster.link_wire_Bps, &why)) return *error = "--link: " + why, ParseOutcome::error;
      given("link");
    }
    else if (a == "--send-buffer") {
      size_t b = 0;
      ok = bench::parseSize(v, &b), o->cluster.fabric.send_buffer_bytes = static_cast<double>(b), given("send_buffer_bytes");
    }
    else if (a == "--shm-ring") {
      size_t b = 0;
      ok = bench::parseSize(v, &b), o->cluster.fabric.shm_ring_bytes = static_cast<double>(b), given("shm_ring_bytes");
    }
    else if (a == "--goodput") ok = parseDouble(v, &o->cluster.goodput);
    else if (a == "--inter-alpha-us") ok = parseDouble(v, &d) && d >= 0, o->cluster.inter_alpha_s = d / 1e6;
    else if (a == "--intra-alpha-us") ok = parseDouble(v, &d) && d >= 0, o->cluster.intra_alpha_s = d / 1e6;
    else if (a == "--intra-GBps") ok = parseDouble(v, &d) && d > 0, o->cluster.intra_beta_Bps = d * 1e9;
    else if (a == "--gamma-GBps") ok = parseDouble(v, &d) && d > 0, o->cluster.gamma_Bps = d * 1e9;
    else if (a == "--loaded-step-us") ok = parseDouble(v, &d) && d >= 0, o->cluster.loaded_step_s = d / 1e6;
    else if (a == "--nics") ok = parseInt(v, 1, &o->cluster.fabric.nics_per_host), given("nics_per_host");
    else if (a == "--hosts-per-leaf") ok = parseInt(v, 0, &o->cluster.fabric.hosts_per_leaf), given("hosts_per_leaf");
    else if (a == "--oversubscription") ok = parseDouble(v, &o->cluster.fabric.oversubscription), given("oversubscription");
    else if (a == "--host-memory-GBps")
      ok = parseDouble(v, &d) && d >= 0, o->cluster.fabric.host_memory_Bps = d * 1e9, given("host_memory_GBps");
    else if (a == "--per-message-us")
      ok = parseDouble(v, &d) && d >= 0, o->cluster.fabric.per_message_s = d / 1e6, given("per_message_us");
    else if (a == "--per-op-us")
      ok = parseDouble(v, &d) && d >= 0, o->cluster.fabric.per_op_s = d / 1e6, given("per_op_us");
    else if (a == "--burst") {
      size_t b = 0;
      ok = bench::parseSize(v, &b), o->cluster.fabric.burst_bytes = static_cast<double>(b), given("burst_bytes");
    }
    else if (a == "--slice") ok = bench::parseSize(v, &o->slice_bytes) && o->slice_bytes > 0;
    else if (a == "--depth") ok = parseInt(v, 1, &o->pipeline_depth);
    else if (a == "--csv") o->csv_path = v;
    else if (a == "--startup-plan") {
      for (const std::string& item : splitList(v)) {
        int r = 0;
        ok = ok && parseInt(item.c_str(), 1, &r);
        o->plan_layout.push_back(r);
      }
      ok = ok && !o->plan_layout.empty();
    }
    else if (a == "--cores") ok = parseDouble(v, &o->startup_costs.cores_per_host) && o->startup_costs.cores_per_host >= 0;
    else if (a == "--spawn-ms") ok = parseDouble(v, &d) && d >= 0, o->startup_costs.spawn_s = d / 1e3;
    else if (a == "--host-launch-ms") ok = parseDouble(v, &d) && d >= 0, o->startup_costs.host_launch_s = d / 1e3;
    else if (a == "--store-request-us") ok = parseDouble(v, &d) && d >= 0, o->startup_costs.store_request_s = d / 1e6;
    else if (a == "--switch-us") ok = parseDouble(v, &d) && d >= 0, o->startup_costs.switch_s = d / 1e6;
    else if (a == "--cpu-scale") ok = parseDouble(v, &o->cpu_scale) && o->cpu_scale > 0;
    else if (a == "--max-memory") ok = bench::parseSize(v, &o->max_memory_bytes);
    else return *error = "unknown option " + a + " (see --help)", ParseOutcome::error;
    if (!ok) return *error = a + " " + v + ": not a valid value (see --help)", ParseOutcome::error;
  }
  if (o->min_bytes > o->max_bytes) return *error = "-b is larger than -e", ParseOutcome::error;
  return ParseOutcome::run;
}

std::vector<size_t> simSizes(const SimOptions& o) {
  bench::PerfOptions p;
  p.minBytes = o.min_bytes;
  p.maxBytes = o.max_bytes;
  p.stepFactor = o.step_factor;
  p.stepBytes = o.step_bytes ? o.step_bytes : p.stepBytes;
  return bench::sweepSizes(p);
}

}  // namespace coll::sim
