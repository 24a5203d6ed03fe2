#include "trainer/elastic_formation.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>

namespace coll::trainer {
namespace {

// P members that held stages 0..P-1 of one replica.
bool whole(const std::vector<size_t>& members, const std::vector<ElasticRole>& roles, int stages) {
  if (members.size() != static_cast<size_t>(stages)) return false;
  std::vector<bool> seen(static_cast<size_t>(stages), false);
  for (size_t m : members) {
    const int64_t s = roles[m].stage;
    if (s < 0 || s >= stages || seen[static_cast<size_t>(s)]) return false;
    seen[static_cast<size_t>(s)] = true;
  }
  return true;
}

// Replicas whose every stage is still a member and holds state, in their old order; their
// members take the same stages in replicas 0, 1, ...
int keepWholeReplicas(const std::vector<ElasticRole>& roles, int stages, ElasticFormation* f) {
  std::map<int64_t, std::vector<size_t>> by_replica;
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i].replica >= 0 && roles[i].steps_done >= 0) by_replica[roles[i].replica].push_back(i);
  int kept = 0;
  for (const auto& [old_replica, members] : by_replica) {
    if (!whole(members, roles, stages)) continue;
    for (size_t m : members) f->placement[m] = {kept, static_cast<int>(roles[m].stage), true};
    ++kept;
  }
  return kept;
}

int64_t resumeStep(const std::vector<ElasticRole>& roles, const ElasticFormation& f) {
  int64_t lowest = INT64_MAX, highest = -1;
  for (size_t i = 0; i < roles.size(); ++i) {
    if (!f.placement[i].keeps_state) continue;
    lowest = std::min(lowest, roles[i].steps_done);
    highest = std::max(highest, roles[i].steps_done);
  }
  if (f.kept == 0) {
    for (const ElasticRole& r : roles)
      if (r.steps_done > 0)
        throw std::runtime_error("elastic pipeline: every replica lost a stage, so no member holds the whole model's "
                                 "state any more (it had applied " + std::to_string(r.steps_done) +
                                 " steps); the job cannot go on");
    return 0;
  }
  if (highest - lowest > 1)
    throw std::runtime_error("elastic pipeline: the kept replicas' ranks have applied " + std::to_string(lowest) +
                             " to " + std::to_string(highest) + " steps; more than one step apart cannot happen "
                             "in a pipeline (a bug)");
  return lowest;
}

}  // namespace

ElasticFormation planElasticFormation(const std::vector<ElasticRole>& roles, int stages) {
  if (stages < 1) throw std::invalid_argument("elastic pipeline: stages must be at least 1");
  ElasticFormation f;
  f.placement.resize(roles.size());
  f.kept = keepWholeReplicas(roles, stages, &f);
  std::vector<size_t> pool;  // the others, in member order
  for (size_t i = 0; i < roles.size(); ++i)
    if (f.placement[i].replica < 0) pool.push_back(i);
  const size_t fresh = pool.size() / static_cast<size_t>(stages);
  for (size_t k = 0; k < fresh * static_cast<size_t>(stages); ++k)
    f.placement[pool[k]] = {f.kept + static_cast<int>(k / static_cast<size_t>(stages)),
                            static_cast<int>(k % static_cast<size_t>(stages)), false};
  f.replicas = f.kept + static_cast<int>(fresh);
  if (f.replicas == 0)
    throw std::runtime_error("elastic pipeline: " + std::to_string(roles.size()) + " member(s), fewer than the " +
                             std::to_string(stages) + " stages of one replica");
  f.resume_step = resumeStep(roles, f);
  return f;
}

std::string describeFormation(const ElasticFormation& f) {
  size_t out = 0;
  for (const ElasticPlacement& p : f.placement) out += p.replica < 0;
  return std::to_string(f.replicas) + " replica(s) (" + std::to_string(f.kept) + " kept, " +
         std::to_string(f.replicas - f.kept) + " new), " + std::to_string(out) + " sitting out, resuming at step " +
         std::to_string(f.resume_step);
}

}  // namespace coll::trainer
