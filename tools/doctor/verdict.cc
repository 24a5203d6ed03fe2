#include "verdict.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/log.h"

namespace coll::doctor {
namespace {

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string mib(uint64_t bytes) { return format("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

struct Findings {
  std::vector<std::string> failures, warnings;
  void fail(std::string s) { failures.push_back(std::move(s)); }
  void warn(std::string s) { warnings.push_back(std::move(s)); }
};

// The ranks that share each host (coll's grouping: host ids), in rank order.
std::map<std::string, std::vector<int>> ranksByHost(const Inputs& in) {
  std::map<std::string, std::vector<int>> out;
  for (int r = 0; r < in.size; ++r)
    if (in.reports[r]) out[in.reports[r]->host_id].push_back(r);
  return out;
}

std::string ranksTable(const Inputs& in, const std::map<std::string, std::vector<int>>& hosts) {
  std::string t = format("%-5s %-14s %-36s %-22s %-12s %-8s %s\n", "rank", "host", "interface coll uses",
                         "/dev/shm free (need)", "rmem_max", "RDMA", "GPU");
  for (int r = 0; r < in.size; ++r) {
    if (!in.reports[r]) {
      t += format("%-5d %s\n", r, "(no report: never reached the store)");
      continue;
    }
    const HostReport& h = *in.reports[r];
    const size_t local = hosts.at(h.host_id).size();
    std::string iface = h.choose_error.empty() ? describeInterface(h.chosen) : "none";
    std::string shm = local > 1 ? format("%s (%s)", mib(h.shm_free).c_str(), mib(local * (local - 1) * h.shm_per_peer).c_str())
                                : mib(h.shm_free) + " (none)";
    std::string rdma = h.rdma_devices.empty() ? "none" : h.rdma_devices.front();
    t += format("%-5d %-14s %-36s %-22s %-12s %-8s %s\n", r, h.hostname.c_str(), iface.c_str(), shm.c_str(),
                mib(h.rmem_max).c_str(), rdma.c_str(), h.gpu == "present" ? "yes" : "none");
  }
  return t;
}

void checkRanks(const Inputs& in, const std::map<std::string, std::vector<int>>& hosts, Findings* f) {
  std::vector<std::string> missing;
  for (int r = 0; r < in.size; ++r)
    if (!in.reports[r]) missing.push_back(std::to_string(r));
  if (!missing.empty())
    f->fail(format("rank(s) %s never reported to the store at %s within %.0f s. Fix: see their own output (they "
                   "name why: an interface down, no route, the store's port filtered), and check that they started.",
                   join(missing, ", ").c_str(), in.store.c_str(), std::chrono::duration<double>(in.waited).count()));
  for (int r = 0; r < in.size; ++r)
    if (in.reports[r] && !in.reports[r]->config_problems.empty())
      f->fail(format("rank %d: coll's init would refuse its settings: %s.", r, join(in.reports[r]->config_problems, "; ").c_str()));
  for (const auto& [id, ranks] : hosts) {
    const HostReport& h = *in.reports[ranks.front()];
    if (!h.choose_error.empty())
      f->fail(format("%s (rank %d): no interface for coll's sockets: %s. Fix: set COLL_SOCKET_IFNAME to an "
                     "interface that reaches the other hosts.", h.hostname.c_str(), h.rank, h.choose_error.c_str()));
    else if (!h.chosen.up || !h.chosen.running)
      f->fail(format("%s: interface %s is %s. Fix: bring it up (ip link set %s up) or set COLL_SOCKET_IFNAME to one "
                     "that is.", h.hostname.c_str(), h.chosen.name.c_str(), h.chosen.up ? "up without carrier" : "down",
                     h.chosen.name.c_str()));
    // A ring is reserved by its first message (src/transport/shm/layout.h): to start and run a
    // ring all-reduce each rank needs the rings of its two ring neighbours, more as other peers send.
    const uint64_t need = ranks.size() * std::min<uint64_t>(2, ranks.size() - 1) * h.shm_per_peer;
    uint64_t free_bytes = UINT64_MAX;
    for (int r : ranks) free_bytes = std::min(free_bytes, in.reports[r]->shm_free);
    if (ranks.size() > 1 && free_bytes < need)
      f->fail(format("%s: /dev/shm has %s free, and coll's shared memory needs %s for its %zu ranks. Fix: enlarge "
                     "it (mount -o remount,size=1G /dev/shm; in Docker, --shm-size=1g), or shrink the rings, of which each rank "
                     "fills two to start and one more for each other peer that sends to it "
                     "(COLL_SHM_SLOT_BYTES, COLL_SHM_NSLOTS).", h.hostname.c_str(), mib(free_bytes).c_str(),
                     mib(need).c_str(), ranks.size()));
    if (h.rmem_max < h.socket_buffer || h.wmem_max < h.socket_buffer)
      f->warn(format("%s: the kernel caps socket buffers at %s (net.core.rmem_max) / %s (wmem_max), below the %s "
                     "coll asks (COLL_SOCKET_BUFFER): long links will run below their rate. Fix: sysctl -w "
                     "net.core.rmem_max=%llu net.core.wmem_max=%llu.", h.hostname.c_str(), mib(h.rmem_max).c_str(),
                     mib(h.wmem_max).c_str(), mib(h.socket_buffer).c_str(),
                     static_cast<unsigned long long>(h.socket_buffer), static_cast<unsigned long long>(h.socket_buffer)));
  }
}

void checkMtus(const Inputs& in, const std::map<std::string, std::vector<int>>& hosts, Findings* f) {
  std::map<int, std::vector<std::string>> by_mtu;
  for (const auto& [id, ranks] : hosts) {
    const HostReport& h = *in.reports[ranks.front()];
    if (h.choose_error.empty()) by_mtu[h.chosen.mtu].push_back(h.hostname + " " + h.chosen.name);
  }
  if (by_mtu.size() < 2) return;
  std::vector<std::string> parts;
  for (const auto& [mtu, names] : by_mtu) parts.push_back(format("%d on %s", mtu, join(names, ", ").c_str()));
  f->warn(format("the MTU differs between hosts: %s. TCP adapts to the smaller one, but RDMA and jumbo-frame paths "
                 "do not, and a switch in between may drop full-size frames. Fix: one MTU on every host and switch "
                 "port (ip link set dev IFACE mtu N).", join(parts, "; ").c_str()));
}

std::string fixFor(const ProbeResult& p, const HostReport& from, const HostReport& to) {
  if (p.stage == "transfer") {  // one finding for both directions of a pair of hosts
    const HostReport& a = from.hostname < to.hostname ? from : to;
    const HostReport& b = from.hostname < to.hostname ? to : from;
    return format("full-size packets are lost between %s (MTU %d) and %s (MTU %d): make the MTU agree along the "
                  "whole path, switches included", a.hostname.c_str(), a.chosen.mtu, b.hostname.c_str(), b.chosen.mtu);
  }
  if (p.why.rfind("timed out", 0) == 0)
    return format("a firewall on %s (or between) drops connections to its ports: allow TCP from the other hosts",
                  to.hostname.c_str());
  if (p.why.rfind("refused", 0) == 0) return format("a firewall on %s rejects TCP from %s", to.hostname.c_str(), from.hostname.c_str());
  return format("check the route from %s to %s (ip route get %s)", from.hostname.c_str(), to.hostname.c_str(),
                to.chosen.address.c_str());
}

std::string checkProbes(const Inputs& in, Findings* f) {
  std::string table;
  size_t total = 0, failed = 0;
  std::map<std::string, int> fixes;  // fix -> pairs
  for (int a = 0; a < in.size; ++a)
    for (const ProbeResult& p : in.probes[a]) {
      ++total;
      if (p.ok) continue;
      ++failed;
      const HostReport& from = *in.reports[a];
      const HostReport& to = *in.reports[p.peer];
      table += format("  %d (%s) -> %d (%s %s): %s: %s\n", a, from.hostname.c_str(), p.peer, to.hostname.c_str(),
                      to.probe_address.c_str(), p.stage.c_str(), p.why.c_str());
      ++fixes[fixFor(p, from, to)];
    }
  for (const auto& [fix, pairs] : fixes) f->fail(format("%d pair(s) failed. Fix: %s.", pairs, fix.c_str()));
  return format("connection probes between hosts: %zu of %zu succeeded\n", total - failed, total) + table;
}

}  // namespace

Verdict judge(const Inputs& in) {
  Verdict v;
  const auto hosts = ranksByHost(in);
  Findings f;
  v.text = format("coll-doctor: %d ranks on %zu hosts, store %s\n\n", in.size, hosts.size(), in.store.c_str());
  v.text += ranksTable(in, hosts) + "\n";
  checkRanks(in, hosts, &f);
  checkMtus(in, hosts, &f);
  v.text += checkProbes(in, &f) + "\n";
  for (const std::string& s : f.failures) v.text += "FAIL: " + s + "\n";
  for (const std::string& s : f.warnings) v.text += "WARN: " + s + "\n";
  v.failed = !f.failures.empty();
  v.warnings = static_cast<int>(f.warnings.size());
  v.text += v.failed ? format("verdict: the job would fail (%zu problem(s) above)\n", f.failures.size())
                     : format("verdict: OK%s\n", v.warnings ? format(" (%d warning(s))", v.warnings).c_str() : "");
  return v;
}

}  // namespace coll::doctor
