#include "select/tuning.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "base/log.h"

namespace coll::select {

const TunedEntry* TuningTable::lookup(algo::Collective collective, size_t bytes) const {
  const TunedEntry* best = nullptr;
  double best_distance = 0;
  size_t lo = SIZE_MAX, hi = 0;
  const double want = std::log2(static_cast<double>(std::max<size_t>(bytes, 1)));
  for (const TunedEntry& e : entries) {
    if (e.collective != collective) continue;
    lo = std::min(lo, e.bytes);
    hi = std::max(hi, e.bytes);
    double d = std::fabs(std::log2(static_cast<double>(std::max<size_t>(e.bytes, 1))) - want);
    if (!best || d < best_distance) best = &e, best_distance = d;
  }
  if (!best || bytes < lo / 2 || bytes / 2 > hi) return nullptr;
  return best;
}

Json toJson(const TuningTable& t) {
  Json j = Json::object();
  j.set("format", "coll-tuning-1");
  j.set("layout_hash", t.layout_hash);
  Json entries = Json::array();
  for (const TunedEntry& e : t.entries) {
    Json x = Json::object();
    x.set("collective", algo::toString(e.collective));
    x.set("bytes", static_cast<unsigned long long>(e.bytes));
    x.set("algorithm", e.algorithm);
    x.set("measured_us", e.measured_s * 1e6);
    entries.push(std::move(x));
  }
  j.set("entries", std::move(entries));
  return j;
}

Status fromJson(const Json& j, TuningTable* out) {
  if (j["format"].string() != "coll-tuning-1") return invalidArgument("tuning: \"format\" must be \"coll-tuning-1\"");
  TuningTable t;
  t.layout_hash = j["layout_hash"].string();
  for (const Json& x : j["entries"].items()) {
    TunedEntry e;
    if (!algo::parseCollective(x["collective"].string(), &e.collective))
      return invalidArgument("tuning: unknown collective '" + x["collective"].string() + "'");
    e.bytes = static_cast<size_t>(x["bytes"].number(0));
    e.algorithm = x["algorithm"].string();
    e.measured_s = x["measured_us"].number(0) / 1e6;
    t.entries.push_back(std::move(e));
  }
  *out = std::move(t);
  return Status::ok();
}

Status saveTuningFile(const std::string& path, const TuningTable& t) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // Written aside and renamed: ranks of several jobs may share the cache directory.
  std::string tmp = path + format(".tmp%d", static_cast<int>(::getpid()));
  {
    std::ofstream out(tmp);
    out << toJson(t).dump(2) << "\n";
    if (!out.good()) return invalidArgument("cannot write tuning file " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return invalidArgument("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::ok();
}

Status loadTuningFile(const std::string& path, const std::string& expected_hash, TuningTable* out) {
  Json j;
  Status st;
  if (!Json::parseFile(path, &j, &st)) return invalidArgument("no tuning file " + path);
  if (!st) return st;
  st = fromJson(j, out);
  if (!st) return invalidArgument(path + ": " + st.message());
  if (out->layout_hash != expected_hash)
    return invalidArgument(path + ": made for topology " + out->layout_hash + ", this one is " + expected_hash);
  return Status::ok();
}

std::string defaultTuningPath(const std::string& configured, const std::string& layout_hash) {
  if (!configured.empty()) return configured;
  std::string base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::string(home) + "/.cache";
  else base = "/tmp";
  return base + "/coll/tune-" + layout_hash + ".json";
}

}  // namespace coll::select
