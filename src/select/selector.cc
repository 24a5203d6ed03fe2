#include "select/selector.h"

#include <algorithm>

#include "base/log.h"
#include "select/cost_model.h"

namespace coll::select {

Selector::Selector(std::vector<AlgoRule> rules, topology::Topology topology, size_t slice_bytes, TuningTable tuning)
    : rules_(std::move(rules)), topology_(std::move(topology)), slice_bytes_(slice_bytes), tuning_(std::move(tuning)) {}

std::string formatSeconds(double s) {
  if (s < 0) return "-";
  if (s < 1e-3) return format("%.1f us", s * 1e6);
  if (s < 1) return format("%.2f ms", s * 1e3);
  return format("%.2f s", s);
}

std::string describeRejected(const std::vector<Rejected>& rejected) {
  std::string out;
  for (const Rejected& r : rejected) {
    if (!out.empty()) out += "; ";
    out += r.algorithm + (r.predicted_s >= 0 ? " " + formatSeconds(r.predicted_s) : "") +
           (r.reason.empty() ? "" : (r.predicted_s >= 0 ? " (" + r.reason + ")" : ": " + r.reason));
  }
  return out.empty() ? "none" : out;
}

// Prices every algorithm the catalogue has for the collective; the cheapest wins, the others
// are kept with their time (or why they cannot run) for the log.
Choice Selector::modelChoice(algo::Collective collective, size_t bytes, size_t elem_size, bool schedules_only) const {
  Choice c;
  std::vector<std::pair<const algo::AlgorithmInfo*, Prediction>> priced;
  const size_t slice = sliceBytes(bytes);
  for (const algo::AlgorithmInfo& a : algo::catalog())
    if (a.collective == collective)
      priced.emplace_back(&a, predictTime(collective, a.name, bytes, elem_size, topology_, slice));
  for (const auto& [a, p] : priced)
    if (p.supported && (a->isSchedule() || !schedules_only) && (!c.algorithm || p.seconds < c.predicted_s)) {
      c.algorithm = a;
      c.predicted_s = p.seconds;
    }
  if (!c.algorithm) {  // nothing priced: keep the catalogue's first, and say so
    c.algorithm = algo::firstAlgorithm(collective);
    c.reason = "no candidate has a cost formula: the catalogue's first";
  } else {
    c.reason = format("cost model: fastest of %zu on %d host(s) x %d rank(s)", priced.size(), topology_.numHosts(),
                      topology_.maxRanksPerHost());
    const topology::LeafSwitches& leaves = topology_.leaves;
    if (leaves.leaves(topology_.numHosts()) > 1)
      c.reason += format(", %d per leaf switch at %g:1", leaves.hosts_per_leaf, leaves.oversubscription);
  }
  for (const auto& [a, p] : priced) {
    if (a == c.algorithm) continue;
    const char* why = !p.supported ? p.why_not : (!a->isSchedule() && schedules_only ? "not a schedule: the board path runs it" : "");
    c.rejected.push_back({a->name, p.supported ? p.seconds : -1, why});
  }
  return c;
}

size_t Selector::boardCapacity(algo::Collective collective) const {
  if (collective == algo::Collective::allreduce) return topology_.board_bytes;
  return collective == algo::Collective::broadcast ? topology_.board_broadcast_bytes : 0;
}

// The board's formula grows with the size faster than the message path's (it reads every
// rank's cell, and its copies do not overlap): it wins up to some size and loses above, which a
// binary search finds.
void Selector::setBoard(size_t allreduce_bytes, size_t broadcast_bytes) {
  topology_.board_bytes = allreduce_bytes;
  topology_.board_broadcast_bytes = broadcast_bytes;
  cache_.clear();
  auto upTo = [this](algo::Collective c) {
    auto picked = [&](size_t bytes) { return !modelChoice(c, bytes).algorithm->isSchedule(); };
    size_t lo = 0, hi = boardCapacity(c);  // picked up to lo; not known above
    if (hi > 0 && picked(hi)) return hi;
    while (hi > lo + 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (picked(mid) ? lo : hi) = mid;
    }
    return lo;
  };
  board_allreduce_up_to_ = upTo(algo::Collective::allreduce);
  board_broadcast_up_to_ = upTo(algo::Collective::broadcast);
}

bool Selector::picksBoard(algo::Collective collective, size_t bytes) const {
  if (bytes == 0 || bytes > boardCapacity(collective)) return false;
  if (const AlgoRule* rule = matchRule(rules_, collective, bytes)) return rule->algorithm == "board";
  return bytes <= boardUpTo(collective);
}

// The board, the rank-order combining COLL_DETERMINISTIC asks for included.
Choice Selector::boardChoice(algo::Collective collective, size_t bytes, size_t elem_size) const {
  Choice model = modelChoice(collective, bytes, elem_size);
  const algo::AlgorithmInfo* board = algo::findAlgorithm(collective, "board");
  Choice c{board, model.reason, -1, {}};
  if (const AlgoRule* rule = matchRule(rules_, collective, bytes)) c.reason = "forced by COLL_ALGO rule '" + rule->text + "'";
  if (deterministic_) c.reason += "; COLL_DETERMINISTIC=1 keeps it: it combines in rank order";
  if (model.algorithm == board) c.predicted_s = model.predicted_s;
  else c.rejected.push_back({model.algorithm->name, model.predicted_s, "the cost model's choice"});
  for (const Rejected& r : model.rejected)
    if (r.algorithm == board->name) c.predicted_s = r.predicted_s;
    else c.rejected.push_back(r);
  return c;
}

Choice Selector::decide(algo::Collective collective, size_t bytes, size_t elem_size, bool schedules_only) const {
  if (!schedules_only && picksBoard(collective, bytes)) return boardChoice(collective, bytes, elem_size);
  const algo::AlgorithmInfo* ordered = deterministic_ ? algo::findAlgorithm(collective, "ordered") : nullptr;
  if (ordered) {
    Choice c = modelChoice(collective, bytes, elem_size, true);  // for the others' times
    std::vector<Rejected> rejected;
    for (Rejected& r : c.rejected)
      if (r.algorithm != ordered->name) rejected.push_back(std::move(r));
    if (c.algorithm != ordered) rejected.insert(rejected.begin(), {c.algorithm->name, c.predicted_s, "the cost model's choice"});
    return {ordered, "COLL_DETERMINISTIC=1: operands combined in rank order", -1, std::move(rejected)};
  }
  const AlgoRule* rule = matchRule(rules_, collective, bytes);
  if (rule && !algo::findAlgorithm(collective, rule->algorithm)->isSchedule()) {  // the board, where it cannot run
    Choice c = modelChoice(collective, bytes, elem_size, true);
    const Prediction board = predictTime(collective, rule->algorithm.c_str(), bytes, elem_size, topology_, sliceBytes(bytes));
    const char* why = board.supported ? "the op is not the board path's: device buffers staged on the host"
                                      : board.why_not;
    c.reason = "COLL_ALGO rule '" + rule->text + "' names the board, which cannot take it here (" + why + "); " +
               c.reason;
    return c;
  }
  if (rule) {
    Choice c = modelChoice(collective, bytes, elem_size, true);  // for the predicted times of the others
    const algo::AlgorithmInfo* forced = algo::findAlgorithm(collective, rule->algorithm);
    std::vector<Rejected> rejected;
    if (c.algorithm != forced) rejected.push_back({c.algorithm->name, c.predicted_s, "the cost model's choice"});
    double forced_s = -1;
    for (const Rejected& r : c.rejected)
      if (r.algorithm == forced->name) forced_s = r.predicted_s;
      else rejected.push_back(r);
    if (c.algorithm == forced) forced_s = c.predicted_s;
    return {forced, "forced by COLL_ALGO rule '" + rule->text + "'", forced_s, std::move(rejected)};
  }
  Choice model = modelChoice(collective, bytes, elem_size, true);
  if (const TunedEntry* tuned = tuning_.lookup(collective, bytes)) {
    if (const algo::AlgorithmInfo* a = algo::findAlgorithm(collective, tuned->algorithm)) {
      Choice c;
      c.algorithm = a;
      c.predicted_s = tuned->measured_s;
      c.reason = format("COLL_TUNE: measured fastest at %s", formatBytes(tuned->bytes).c_str());
      if (model.algorithm != a) c.rejected.push_back({model.algorithm->name, model.predicted_s, "the cost model's choice"});
      return c;
    }
  }
  return model;
}

const Choice& Selector::choose(algo::Collective collective, size_t bytes, size_t elem_size, bool schedules_only) {
  auto key = std::make_tuple(collective, bytes, elem_size, schedules_only);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Choice c = decide(collective, bytes, elem_size, schedules_only);
  logOnce(collective, bytes, c);
  if (cache_.size() >= 4096) cache_.clear();  // bounded: odd sizes must not grow it forever
  return cache_.emplace(key, std::move(c)).first->second;
}

// One line per distinct (collective, algorithm, why): a trainer's thousands of steps log
// their few choices once, and a size range that switches algorithm shows where.
void Selector::logOnce(algo::Collective collective, size_t bytes, const Choice& c) {
  std::string why = c.reason.substr(0, c.reason.find(':'));
  std::string key = std::string(algo::toString(collective)) + "/" + c.algorithm->name + "/" + why;
  if (!logged_.insert(key).second) return;
  COLL_INFO("TUNE", "%s of %s -> %s in slices of %s, predicted %s (%s); rejected: %s", algo::toString(collective),
            formatBytes(bytes).c_str(), c.algorithm->name, formatBytes(sliceBytes(bytes)).c_str(), formatSeconds(c.predicted_s).c_str(),
            c.reason.c_str(), describeRejected(c.rejected).c_str());
}

}  // namespace coll::select
