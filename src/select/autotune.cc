#include "select/autotune.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "select/selector.h"

namespace coll::select {
namespace {

// Sizes a factor 16 apart: the table answers for each size the nearest measured one (up to a
// factor 2 beyond the ends, tuning.h); beyond, the cost model decides.
constexpr size_t kSizes[] = {8, 256, 4 << 10, 64 << 10, 1 << 20, 4 << 20};
// Small all-reduces take tens of microseconds with run-to-run noise of tens of percent on a
// shared machine (netcluster 2 x 2 at 1 Gbit/s: 8 B from 69 to 115 us between algorithms, and
// up to 50% between runs of one): the median of many runs tells them apart, and costs
// milliseconds. Large ones are steady: the best of two (the first also warms buffers).
constexpr size_t kSmall = 64 << 10;
constexpr int kSmallRuns = 15;
constexpr int kLargeRuns = 2;

// This rank's time for one algorithm and size: the median of the small runs, else the best.
Status timeOne(const TimedAllreduce& run, const algo::AlgorithmInfo& a, size_t bytes, double* seconds) {
  const int runs = bytes <= kSmall ? kSmallRuns : kLargeRuns;
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    double s = 0;
    COLL_RETURN_IF_ERROR(run(a, bytes, &s));
    times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  *seconds = bytes <= kSmall ? times[times.size() / 2] : times.front();
  return Status::ok();
}

Status measureAll(const TimedAllreduce& run, const std::string& hash, TuningTable* table) {
  table->layout_hash = hash;
  table->entries.clear();
  for (size_t bytes : kSizes) {
    TunedEntry best{algo::Collective::allreduce, bytes, "", 0};
    for (const algo::AlgorithmInfo& a : algo::catalog()) {
      if (a.collective != algo::Collective::allreduce || !a.isSchedule()) continue;  // the board: times schedules only
      double fastest = 0;
      COLL_RETURN_IF_ERROR(timeOne(run, a, bytes, &fastest));
      COLL_INFO("TUNE", "autotune: allreduce %s of %s: %s", a.name, formatBytes(bytes).c_str(),
                formatSeconds(fastest).c_str());
      if (best.algorithm.empty() || fastest < best.measured_s) best.algorithm = a.name, best.measured_s = fastest;
    }
    table->entries.push_back(best);
  }
  return Status::ok();
}

}  // namespace

Status autotune(const topology::ProbeContext& ctx, const std::string& path, const std::string& layout_hash,
                const TimedAllreduce& run, TuningTable* out) {
  const std::string key = ctx.key_prefix + "tune/";
  if (ctx.rank == 0) {
    TuningTable found;
    Status st = loadTuningFile(path, layout_hash, &found);
    if (!st) COLL_INFO("TUNE", "autotune: measuring (%s)", st.message().c_str());
    COLL_RETURN_IF_ERROR(ctx.store->set(key + "decision", st ? toJson(found).dump() : "measure", ctx.deadline));
  }
  std::string decision;
  COLL_RETURN_IF_ERROR(ctx.store->get(key + "decision", &decision, ctx.deadline));
  if (decision == "measure") {
    TuningTable mine;
    COLL_RETURN_IF_ERROR(measureAll(run, layout_hash, &mine));
    if (ctx.rank == 0) {
      Status saved = saveTuningFile(path, mine);
      if (!saved) COLL_WARN("TUNE", "autotune: %s", saved.message().c_str());
      else COLL_INFO("TUNE", "autotune: table written to %s", path.c_str());
      COLL_RETURN_IF_ERROR(ctx.store->set(key + "table", toJson(mine).dump(), ctx.deadline));
    }
    COLL_RETURN_IF_ERROR(ctx.store->get(key + "table", &decision, ctx.deadline));
  } else {
    COLL_INFO("TUNE", "autotune: reusing %s", path.c_str());
  }
  Json j;
  COLL_RETURN_IF_ERROR(Json::parse(decision, &j));
  return fromJson(j, out);
}

}  // namespace coll::select
