// Where a communicator's start-up went: the time and the store traffic of each phase of
// CommunicatorImpl::create, logged at INFO when the rank is ready (NCCL prints its init
// timings the same way) and read by the start-up model's check (tools/sim/startup_model.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/store.h"

namespace coll {

struct StartupPhase {
  std::string name;
  double seconds = 0;
  bootstrap::StoreTraffic traffic;  // of the communicator's store clients during the phase
};

class StartupReport {
 public:
  StartupReport();
  // Ends the phase running since the previous call (or construction) under `name`; `store`
  // is the main client (null before it connects), `other` what the phase's own clients asked.
  void endPhase(const char* name, const bootstrap::StoreClient* store, const bootstrap::StoreTraffic& other = {});
  // "ready in 41.2 ms: store 1.1/0, roll call 3.0/6, ...; store 12 requests, 0.9 KiB out, 1.4 KiB in;
  // at 1796283179.450": each phase's milliseconds and store requests, the totals, and the wall
  // clock (Unix seconds) at the last phase's end, by which tools line the ranks up.
  std::string describe() const;

 private:
  double totalSeconds() const;

  std::chrono::steady_clock::time_point last_;
  bootstrap::StoreTraffic counted_;
  double ready_unix_s_ = 0;
  std::vector<StartupPhase> phases_;
};

}  // namespace coll
