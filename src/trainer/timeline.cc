#include "trainer/timeline.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace coll::trainer {
namespace {

const char* laneName(Lane lane) {
  switch (lane) {
    case Lane::compute: return "compute";
    case Lane::comm: return "communication";
    case Lane::input: return "input";
  }
  return "?";
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

}  // namespace

void Timeline::record(TimelineEvent event) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (events_.size() >= kMaxEvents) events_.erase(events_.begin(), events_.begin() + kMaxEvents / 2);
  events_.push_back(std::move(event));
}

std::vector<TimelineEvent> Timeline::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

void Timeline::clear() {
  std::lock_guard lock(mu_);
  events_.clear();
}

std::string Timeline::chromeTraceEvents(int rank) const {
  std::string out;
  char line[512];
  for (int lane = 0; lane < 3; ++lane) {
    std::snprintf(line, sizeof line,
                  "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}", rank,
                  lane, laneName(static_cast<Lane>(lane)));
    out += (out.empty() ? "" : ",\n") + std::string(line);
  }
  std::snprintf(line, sizeof line, ",\n{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                rank, rank);
  out += line;
  for (const TimelineEvent& e : events()) {
    std::snprintf(line, sizeof line,
                  ",\n{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"step\": %lld, \"bytes\": %zu}}",
                  e.name.c_str(), rank, static_cast<int>(e.lane), micros(e.start - origin_), micros(e.end - e.start),
                  static_cast<long long>(e.step), e.bytes);
    out += line;
  }
  return out;
}

void Timeline::writeChromeTrace(const std::string& path, int rank) const {
  writeChromeTraceFile(path, {chromeTraceEvents(rank)});
}

void writeChromeTraceFile(const std::string& path, const std::vector<std::string>& event_lists) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw std::runtime_error("timeline: cannot write " + path);
  std::fprintf(f.get(), "{\"traceEvents\": [\n");
  for (size_t i = 0; i < event_lists.size(); ++i)
    std::fprintf(f.get(), "%s%s\n", event_lists[i].c_str(), i + 1 < event_lists.size() ? "," : "");
  std::fprintf(f.get(), "], \"displayTimeUnit\": \"ms\"}\n");
  if (std::ferror(f.get())) throw std::runtime_error("timeline: error writing " + path);
}

}  // namespace coll::trainer
