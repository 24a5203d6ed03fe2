// coll-doctor's judgement, made on rank 0 from every rank's host report and connection probes:
// a table of the ranks (host, interface, /dev/shm, socket buffer caps, RDMA, GPU), the probes
// that failed (which pair, on which interface, and why), and findings, each with the fix. A
// finding is a failure when the job would fail (a rank that never reached the store, an
// interface that is down, a pair that cannot connect or whose transfer stalls, /dev/shm too
// small) and a warning when it would run, slower or at risk (MTUs that differ, socket buffers
// capped below what coll asks).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "host_report.h"
#include "pair_probe.h"

namespace coll::doctor {

struct Inputs {
  int size = 0;
  std::string store;                              // "host:port", for messages
  std::chrono::milliseconds waited{0};            // how long rank 0 waited for the reports
  std::vector<std::optional<HostReport>> reports; // per rank; empty: never reported
  std::vector<std::vector<ProbeResult>> probes;   // per dialling rank
};

struct Verdict {
  bool failed = false;
  int warnings = 0;
  std::string text;  // the whole report, ready to print
};

Verdict judge(const Inputs& in);

}  // namespace coll::doctor
