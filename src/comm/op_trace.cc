#include "comm/op_trace.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "base/log.h"
#include "base/json.h"

namespace coll {
namespace {

// Bounds the trace's memory (about 100 bytes an op): a long job keeps its first ops.
constexpr size_t kMaxEvents = 1 << 20;

std::string expand(std::string path, int rank, int number) {
  if (path.empty()) return path;
  const bool has_field = path.find('%') != std::string::npos;
  if (!has_field) path += ".%p.c%c.r%r.json";
  const std::pair<const char*, std::string> fields[] = {
      {"%r", std::to_string(rank)}, {"%p", std::to_string(::getpid())}, {"%c", std::to_string(number)}};
  for (const auto& [field, value] : fields)
    for (size_t at; (at = path.find(field)) != std::string::npos;) path.replace(at, 2, value);
  return path;
}

int nextNumber() {
  static std::atomic<int> traced{0};  // this process's traced communicators
  return traced.fetch_add(1);
}

// A JSON string literal, quotes included.
std::string quoted(const std::string& s) { return Json(s).dump(); }

}  // namespace

OpTrace::OpTrace(std::string path, std::string name, int rank, int size)
    : number_(path.empty() ? -1 : nextNumber()),
      path_(expand(std::move(path), rank, number_)),
      name_(std::move(name)),
      rank_(rank),
      size_(size),
      steady_zero_(Clock::now()),
      wall_zero_(std::chrono::system_clock::now()) {}

void OpTrace::record(Event event) {
  if (!enabled()) return;
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

double OpTrace::wallMicros(Clock::time_point t) const {
  auto since = std::chrono::duration<double, std::micro>(t - steady_zero_).count();
  return std::chrono::duration<double, std::micro>(wall_zero_.time_since_epoch()).count() + since;
}

Status OpTrace::write() const {
  if (!enabled()) return Status::ok();
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path_.c_str(), "w"), &std::fclose);
  if (!f) return Status(ErrorCode::InvalidArgument, format("COLL_TRACE_FILE: cannot write %s", path_.c_str()));
  // One process per rank; thread 1 runs ops, thread 2 shows how long each waited in the queue.
  std::fprintf(f.get(),
               "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"rank\": %d, \"size\": %d, \"pid\": %d, "
               "\"communicator\": %s, \"number\": %d, \"dropped\": %llu},\n\"traceEvents\": [\n",
               rank_, size_, static_cast<int>(::getpid()), quoted(name_).c_str(), number_,
               static_cast<unsigned long long>(dropped_));
  std::fprintf(f.get(), "{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"rank %d\"}},\n"
               "{\"ph\": \"M\", \"pid\": %d, \"tid\": 1, \"name\": \"thread_name\", \"args\": {\"name\": \"run\"}},\n"
               "{\"ph\": \"M\", \"pid\": %d, \"tid\": 2, \"name\": \"thread_name\", \"args\": {\"name\": \"queued\"}}",
               rank_, rank_, rank_, rank_);
  for (const Event& e : events_) {
    const double issued = wallMicros(e.issued), started = wallMicros(e.started), finished = wallMicros(e.finished);
    const std::string name = e.name, algorithm = quoted(e.algorithm);
    const std::string label = (e.algorithm.empty() ? name : name + " (" + e.algorithm + ")") + " " + formatBytes(e.bytes);
    std::fprintf(f.get(),
                 ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": 1, \"name\": %s, \"ts\": %.3f, \"dur\": %.3f, "
                 "\"args\": {\"op\": %s, \"algorithm\": %s, \"sequence\": %llu, \"bytes\": %llu, "
                 "\"queued_us\": %.3f, \"ok\": %s}}",
                 rank_, quoted(label).c_str(), started, finished - started, quoted(name).c_str(), algorithm.c_str(),
                 static_cast<unsigned long long>(e.sequence), static_cast<unsigned long long>(e.bytes),
                 started - issued, e.ok ? "true" : "false");
    if (started > issued)
      std::fprintf(f.get(), ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": 2, \"name\": %s, \"ts\": %.3f, \"dur\": %.3f}",
                   rank_, quoted(name + " queued").c_str(), issued, started - issued);
  }
  std::fprintf(f.get(), "\n]}\n");
  // A full disk shows at the flush or the close: a truncated file must not be called written.
  const bool failed = std::fflush(f.get()) != 0 || std::ferror(f.get()) || std::fclose(f.release()) != 0;
  if (failed) return Status(ErrorCode::InvalidArgument, format("COLL_TRACE_FILE: writing %s failed", path_.c_str()));
  return Status::ok();
}

}  // namespace coll
