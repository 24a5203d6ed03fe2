#include "comm/startup_report.h"

#include "base/log.h"

namespace coll {

StartupReport::StartupReport() : last_(std::chrono::steady_clock::now()) {}

void StartupReport::endPhase(const char* name, const bootstrap::StoreClient* store,
                             const bootstrap::StoreTraffic& other) {
  const auto now = std::chrono::steady_clock::now();
  StartupPhase phase{name, std::chrono::duration<double>(now - last_).count(), {}};
  if (store) {
    const bootstrap::StoreTraffic& total = store->traffic();
    phase.traffic = {total.requests - counted_.requests, total.bytes_out - counted_.bytes_out,
                     total.bytes_in - counted_.bytes_in};
    counted_ = total;
  }
  phase.traffic.requests += other.requests;
  phase.traffic.bytes_out += other.bytes_out;
  phase.traffic.bytes_in += other.bytes_in;
  ready_unix_s_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  phases_.push_back(std::move(phase));
  last_ = now;
}

double StartupReport::totalSeconds() const {
  double total = 0;
  for (const StartupPhase& p : phases_) total += p.seconds;
  return total;
}

std::string StartupReport::describe() const {
  std::string text = format("ready in %.1f ms:", totalSeconds() * 1e3);
  bootstrap::StoreTraffic all;
  for (const StartupPhase& p : phases_) {
    text += format(" %s %.1f/%lld%s", p.name.c_str(), p.seconds * 1e3, static_cast<long long>(p.traffic.requests),
                   &p == &phases_.back() ? ";" : ",");
    all.requests += p.traffic.requests;
    all.bytes_out += p.traffic.bytes_out;
    all.bytes_in += p.traffic.bytes_in;
  }
  return text + format(" store %lld requests, %.1f KiB out, %.1f KiB in; at %.3f", static_cast<long long>(all.requests),
                       all.bytes_out / 1024.0, all.bytes_in / 1024.0, ready_unix_s_);
}

}  // namespace coll
