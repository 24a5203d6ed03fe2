#include "collrun_placement.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace coll::collrun {
namespace {

// Auto binds only when others keep less than this much of the CPUs busy.
constexpr double kBusyLimit = 0.5;
constexpr int kSampleMs = 60;

struct CpuTimes {
  unsigned long long busy = 0, total = 0;
};

// Per CPU, from /proc/stat's "cpuN user nice system idle iowait irq softirq steal" lines.
std::map<int, CpuTimes> readCpuTimes() {
  std::map<int, CpuTimes> times;
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = 0;
    unsigned long long v[8] = {};
    fields >> cpu;
    for (auto& x : v) fields >> x;
    CpuTimes t;
    for (auto x : v) t.total += x;
    t.busy = t.total - v[3] - v[4];  // not idle, not waiting for I/O
    times[cpu] = t;
  }
  return times;
}

std::string cpuList(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size(); ++i) s += (i ? "," : "") + std::to_string(cpus[i]);
  return s;
}

}  // namespace

std::vector<int> allowedCpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

double busyCpus(const std::vector<int>& cpus, int window_ms) {
  auto before = readCpuTimes();
  std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
  auto after = readCpuTimes();
  double busy = 0;
  for (int c : cpus) {
    auto b = before.find(c), a = after.find(c);
    if (b == before.end() || a == after.end() || a->second.total <= b->second.total) continue;
    busy += double(a->second.busy - b->second.busy) / double(a->second.total - b->second.total);
  }
  return busy;
}

Placement choosePlacement(const std::string& bind_to, int np) {
  Placement p;
  p.cpu_of_rank.assign(static_cast<size_t>(np), -1);
  const std::vector<int> cpus = allowedCpus();
  if (cpus.empty() || bind_to == "none") return p;
  auto pin = [&] {
    for (int r = 0; r < np; ++r) p.cpu_of_rank[static_cast<size_t>(r)] = cpus[static_cast<size_t>(r) % cpus.size()];
  };
  if (bind_to == "core") {
    pin();
    return p;
  }
  const double busy = busyCpus(cpus, kSampleMs);
  char line[256];
  if (busy >= kBusyLimit) {
    std::snprintf(line, sizeof line, "collrun: not binding ranks to CPUs: other processes keep %.1f of the %zu busy "
                  "(--bind-to core binds anyway)", busy, cpus.size());
    p.note = line;
    return p;
  }
  pin();
  if (np <= static_cast<int>(cpus.size()))
    std::snprintf(line, sizeof line, "collrun: %d rank(s) fit the %zu CPU(s): rank r runs on CPU r of %s "
                  "(--bind-to none leaves placement to the kernel)", np, cpus.size(), cpuList(cpus).c_str());
  else
    std::snprintf(line, sizeof line, "collrun: %d ranks share the %zu CPU(s) %s: rank r runs on CPU r mod %zu of "
                  "them (--bind-to none leaves placement to the kernel)", np, cpus.size(), cpuList(cpus).c_str(),
                  cpus.size());
  p.note = line;
  return p;
}

}  // namespace coll::collrun
