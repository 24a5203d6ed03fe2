#include "topology/autotune.h"

#include <algorithm>

#include "core/log.h"
#include "topology/selector.h"

namespace coll::topology {
namespace {

constexpr size_t kSizes[] = {1 << 10, 16 << 10, 256 << 10, 1 << 20};
constexpr int kRuns = 2;  // best of: the first run also warms connections and buffers

Status measureAll(const TimedAllreduce& run, const std::string& hash, TuningTable* table) {
  table->layout_hash = hash;
  table->entries.clear();
  for (size_t bytes : kSizes) {
    TunedEntry best{algo::Collective::allreduce, bytes, "", 0};
    for (const algo::AlgorithmInfo& a : algo::catalog()) {
      if (a.collective != algo::Collective::allreduce) continue;
      double fastest = 0;
      for (int i = 0; i < kRuns; ++i) {
        double s = 0;
        COLL_RETURN_IF_ERROR(run(a, bytes, &s));
        fastest = i == 0 ? s : std::min(fastest, s);
      }
      COLL_INFO("TUNE", "autotune: allreduce %s of %s: %s", a.name, formatBytes(bytes).c_str(),
                formatSeconds(fastest).c_str());
      if (best.algorithm.empty() || fastest < best.measured_s) best.algorithm = a.name, best.measured_s = fastest;
    }
    table->entries.push_back(best);
  }
  return Status::ok();
}

}  // namespace

Status autotune(const ProbeContext& ctx, const std::string& path, const std::string& layout_hash,
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

}  // namespace coll::topology
