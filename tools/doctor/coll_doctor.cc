// coll-doctor: a preflight check for a coll job, started by the job's own launcher (srun
// coll-doctor, mpirun coll-doctor, collrun -n 4 coll-doctor, torchrun --no_python coll-doctor,
// or RANK/WORLD_SIZE/MASTER_ADDR by hand). Each rank looks at its host (host_report.h), opens a
// probe listener on the interface coll would use and reports both at the rendezvous store;
// then every rank dials every rank on another host (pair_probe.h); rank 0 prints one report
// and a verdict with the fixes (verdict.h). Exit status: 0 when the job would run, 1 when it
// would fail, 2 for a usage or launcher error. It uses the store only, never a communicator,
// so what would break coll's init is named instead of breaking the doctor.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/store.h"
#include "bootstrap/store_port_range.h"
#include "host_report.h"
#include "pair_probe.h"
#include "verdict.h"

namespace coll::doctor {
namespace {

using bootstrap::Clock;
using coll::Json;
constexpr const char* kPrefix = "coll-doctor/";

struct Options {
  std::chrono::milliseconds wait{30'000};  // for every rank's report, and again for the probes
  ProbeLimits limits;
};

const char* kUsage =
    "usage: coll-doctor [--timeout S] [--connect-timeout S] [--transfer-timeout S] [--bytes N]\n"
    "Run it as the job would run, under its launcher: srun coll-doctor, mpirun coll-doctor,\n"
    "collrun -n 4 coll-doctor, torchrun --no_python ... coll-doctor. Rank 0 prints the report.\n"
    "  --timeout S            wait this long for every rank to report (default 30)\n"
    "  --connect-timeout S    per connection attempt between hosts (default 3)\n"
    "  --transfer-timeout S   per probe transfer once connected (default 5)\n"
    "  --bytes N              bytes each probe sends (default 4194304)\n";

std::chrono::milliseconds seconds(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (!end || *end || v <= 0) throw std::invalid_argument(std::string("not a number of seconds: ") + s);
  return std::chrono::milliseconds(static_cast<long long>(v * 1000));
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument("unknown option or missing value: " + a);
    const char* v = argv[++i];
    if (a == "--timeout") o.wait = seconds(v);
    else if (a == "--connect-timeout") o.limits.connect = seconds(v);
    else if (a == "--transfer-timeout") o.limits.transfer = seconds(v);
    else if (a == "--bytes") o.limits.bytes = static_cast<size_t>(std::strtoull(v, nullptr, 10));
    else throw std::invalid_argument("unknown option " + a);
  }
  return o;
}

// What a rank can say alone, when it cannot reach the store.
void printLocal(const HostReport& me, const std::string& why) {
  std::printf("coll-doctor rank %d on %s: %s\n", me.rank, me.hostname.c_str(), why.c_str());
  for (const InterfaceInfo& i : me.interfaces) std::printf("  interface %s\n", describeInterface(i).c_str());
  if (me.choose_error.empty())
    std::printf("  coll would use %s (%s)\n", describeInterface(me.chosen).c_str(), me.chosen_reason.c_str());
  else
    std::printf("  coll would find no interface: %s\n", me.choose_error.c_str());
  std::printf("verdict: the job would fail (this rank cannot reach the rendezvous store)\n");
}

// Polls until every key of `keys` exists or the deadline passes (check() never parks, so one
// missing rank cannot use up a get's deadline); 1 for the keys that exist.
std::vector<char> awaitKeys(bootstrap::StoreClient& store, const std::vector<std::string>& keys, Clock::time_point deadline) {
  std::vector<char> there(keys.size(), 0);
  for (;;) {
    size_t count = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      bool exists = false;
      // A call's own deadline, not the wait's: a call that times out closes the client.
      if (!there[i] && store.check(keys[i], &exists, Clock::now() + std::chrono::seconds(10)) && exists) there[i] = 1;
      count += there[i];
    }
    if (count == keys.size() || Clock::now() >= deadline) return there;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> keysFor(const char* what, int size) {
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(std::string(kPrefix) + what + "/" + std::to_string(r));
  return keys;
}

Status getJson(bootstrap::StoreClient& store, const std::string& key, Json* out) {
  std::string text;
  COLL_RETURN_IF_ERROR(store.get(key, &text, Clock::now() + std::chrono::seconds(10)));
  return Json::parse(text, out);
}

Json probesJson(const std::vector<ProbeResult>& probes) {
  Json a = Json::array();
  for (const ProbeResult& p : probes) {
    Json j = Json::object();
    j.set("peer", p.peer);
    j.set("ok", p.ok);
    j.set("stage", p.stage);
    j.set("why", p.why);
    j.set("ms", p.ms);
    a.push(j);
  }
  return a;
}

std::vector<ProbeResult> probesFrom(const Json& a) {
  std::vector<ProbeResult> out;
  for (const Json& j : a.items())
    out.push_back(ProbeResult{static_cast<int>(j["peer"].number()), j["ok"].boolean(), j["stage"].string(),
                              j["why"].string(), j["ms"].number()});
  return out;
}

// Every rank that reported and lives on another host than `me`, dialled one after another.
std::vector<ProbeResult> probePeers(const HostReport& me, const std::vector<std::optional<HostReport>>& reports,
                                    const ProbeLimits& limits) {
  std::vector<ProbeResult> out;
  for (const auto& r : reports)
    if (r && r->host_id != me.host_id && !r->probe_address.empty()) out.push_back(probe(r->rank, r->probe_address, limits));
  return out;
}

int run(const Options& o) {
  Config config = Config::fromEnvironment();
  bootstrap::LaunchInfo launch;
  if (Status st = bootstrap::detectLaunch(&launch); !st) {
    std::fprintf(stderr, "coll-doctor: %s\n", st.message().c_str());
    return 2;
  }
  std::string store_host;
  int store_port = 0;
  (void)bootstrap::splitHostPort(launch.store_address, &store_host, &store_port);
  HostReport me = collectHostReport(config, launch.rank, store_host);
  me.config_problems = config.problems;
  std::unique_ptr<ProbeListener> listener;
  if (me.choose_error.empty() && ProbeListener::open(me.chosen.address, &listener)) me.probe_address = listener->address();
  std::unique_ptr<bootstrap::StoreServer> server;
  int tries = launch.store_port_tries;
  if (launch.host_store) {
    if (Status st = bootstrap::serveOnFirstFreePort("0.0.0.0", store_port, tries, launch.secret, &server); !st) {
      printLocal(me, "cannot serve the rendezvous store on port " + std::to_string(store_port) + ": " + st.message());
      return 1;
    }
    launch.store_address = store_host + ":" + std::to_string(server->port());
    tries = 1;
  }
  const auto start = Clock::now();
  std::unique_ptr<bootstrap::StoreClient> store;
  std::string found;
  if (Status st = bootstrap::connectInPortRange(launch.store_address, tries, launch.secret, start + o.wait, &store, &found);
      !st) {
    printLocal(me, "cannot reach the rendezvous store at " + launch.store_address + ": " + st.message());
    return 1;
  }
  launch.store_address = found;
  const int n = launch.size;
  // A store call that fails here shows on rank 0 as this rank never reporting (or reading).
  (void)store->set(std::string(kPrefix) + "report/" + std::to_string(me.rank), toJson(me).dump(), start + o.wait);
  const std::vector<char> reported = awaitKeys(*store, keysFor("report", n), start + o.wait);
  Inputs in;
  in.size = n;
  in.store = launch.store_address;
  in.waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  in.reports.resize(n);
  for (int r = 0; r < n; ++r) {
    Json j;
    HostReport h;
    if (reported[r] && getJson(*store, keysFor("report", n)[r], &j) && fromJson(j, &h)) in.reports[r] = h;
  }
  (void)store->set(std::string(kPrefix) + "probes/" + std::to_string(me.rank), probesJson(probePeers(me, in.reports, o.limits)).dump(),
             Clock::now() + o.wait);
  const std::string verdict_key = std::string(kPrefix) + "verdict";
  if (me.rank == 0) {
    const std::vector<char> probed = awaitKeys(*store, keysFor("probes", n), Clock::now() + o.wait);
    in.probes.resize(n);
    for (int r = 0; r < n; ++r) {
      Json j;
      if (probed[r] && getJson(*store, keysFor("probes", n)[r], &j)) in.probes[r] = probesFrom(j);
    }
    Verdict v = judge(in);
    std::fputs(v.text.c_str(), stdout);
    std::printf("(%d ranks checked in %.2f s since rank 0 reached the store)\n", n,
                std::chrono::duration<double>(Clock::now() - start).count());
    std::fflush(stdout);
    (void)store->set(verdict_key, v.failed ? "fail" : "ok", Clock::now() + o.wait);
    // Rank 0's process may serve the store (as `server`, or under PMI-1 and PMIx as the hosted
    // store rank 0 started while finding the launch): it stays until every rank has read the
    // verdict, or its wait is over. Where collrun serves it the wait costs no more than the reads.
    int64_t read = 0;
    const auto until = Clock::now() + o.wait;
    while (Clock::now() < until && store->add(std::string(kPrefix) + "read", 0, &read, until) && read < n - 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return v.failed ? 1 : 0;
  }
  std::string verdict;
  if (!store->get(verdict_key, &verdict, Clock::now() + 3 * o.wait)) {
    printLocal(me, "rank 0 gave no verdict within its time (see its output)");
    return 1;
  }
  int64_t read = 0;
  (void)store->add(std::string(kPrefix) + "read", 1, &read, Clock::now() + o.wait);
  std::printf("coll-doctor rank %d on %s: %s (rank 0 prints the report)\n", me.rank, me.hostname.c_str(),
              verdict == "ok" ? "OK" : "the job would fail");
  return verdict == "ok" ? 0 : 1;
}

}  // namespace
}  // namespace coll::doctor

int main(int argc, char** argv) {
  try {
    return coll::doctor::run(coll::doctor::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll-doctor: %s\n%s", e.what(), coll::doctor::kUsage);
    return 2;
  }
}
