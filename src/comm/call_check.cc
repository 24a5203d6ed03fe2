#include "comm/call_check.h"

#include "base/log.h"
#include "base/wire_tag.h"
#include "comm/stall_report.h"

namespace coll {

Status checkCall(const OpFingerprint& mine, uint64_t wire_sequence, algo::BuildParams p, select::Selector& selector,
                 const RunSchedule& run, bool* disagreed) {
  const size_t n = static_cast<size_t>(p.nranks);
  std::vector<OpFingerprint> all(n);
  all[static_cast<size_t>(p.rank)] = mine;
  p.count = n * sizeof(OpFingerprint);
  p.elem_size = 1;
  p.in_place = true;  // this rank's entry already sits at its place in the table
  p.average = false;
  algo::Schedule schedule = selector.choose(algo::Collective::allgather, sizeof(OpFingerprint), 1).algorithm->build(p);
  ExecContext ctx;
  ctx.ops.push_back({all.data(), all.data(), wireTag(wire_sequence, kCallCheckWireKind)});
  ctx.type = DataType::u8;
  Status st = run(schedule, ctx);
  if (!st) return Status(st.code(), "COLL_CHECK exchange of call fingerprints: " + st.message(), st.peer());
  st = compareCalls(all, p.rank);
  *disagreed = !st.isOk();
  return st;
}

Status compareCalls(const std::vector<OpFingerprint>& all, int self) {
  std::vector<std::pair<OpFingerprint, std::vector<int>>> calls;  // distinct calls, first caller first
  for (size_t r = 0; r < all.size(); ++r) {
    auto it = calls.begin();
    while (it != calls.end() && !(it->first == all[r])) ++it;
    if (it == calls.end()) calls.push_back({all[r], {static_cast<int>(r)}});
    else it->second.push_back(static_cast<int>(r));
  }
  if (calls.size() == 1) return Status::ok();
  std::string text = "COLL_CHECK: ranks disagree about this call: ";
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::vector<int>& ranks = calls[i].second;
    text += format("%s%s %s called %s", i ? "; " : "", ranks.size() == 1 ? "rank" : "ranks", rankList(ranks).c_str(),
                   calls[i].first.describe().c_str());
  }
  return mismatchError(text + format(" (rank %d refused it before any data moved)", self));
}

}  // namespace coll
