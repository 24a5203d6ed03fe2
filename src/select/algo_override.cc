#include "select/algo_override.h"

#include <cstdlib>
#include <sstream>

#include "base/log.h"

namespace coll::select {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

// 2^64: the first double no size_t holds. Converting it or NaN to size_t is undefined.
constexpr double kSizeLimit = 18446744073709551616.0;

bool parseSize(const std::string& s, size_t* out) {
  if (s == "inf") { *out = SIZE_MAX; return true; }
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v >= 0)) return false;
  switch (*end) {
    case 'K': case 'k': v *= 1024.0; ++end; break;
    case 'M': case 'm': v *= 1024.0 * 1024; ++end; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B') ++end;
  if (*end != '\0' || !(v < kSizeLimit)) return false;
  *out = static_cast<size_t>(v);
  return true;
}

std::optional<algo::Collective> parseCollective(const std::string& s) {
  algo::Collective c;
  if (algo::parseCollective(s, &c)) return c;
  return std::nullopt;
}

Status parseRule(const std::string& text, AlgoRule* rule) {
  std::vector<std::string> f = split(text, ':');
  rule->text = text;
  if (f.size() < 1 || f.size() > 3) return invalidArgument("COLL_ALGO rule '" + text + "' is not ALGO, COLL:ALGO or COLL:LO-HI:ALGO");
  rule->algorithm = f.back();
  if (f.size() >= 2) {
    rule->collective = parseCollective(f[0]);
    if (!rule->collective) return invalidArgument("COLL_ALGO rule '" + text + "': unknown collective '" + f[0] + "' (allreduce, broadcast, reduce, allgather, reducescatter, alltoall, gather, scatter)");
  }
  if (f.size() == 3) {
    std::vector<std::string> range = split(f[1], '-');
    if (range.size() != 2 || !parseSize(range[0], &rule->lo) || !parseSize(range[1], &rule->hi) || rule->lo >= rule->hi)
      return invalidArgument("COLL_ALGO rule '" + text + "': bad size range '" + f[1] + "' (e.g. 0-64K, 64K-inf)");
  }
  for (algo::Collective c : algo::kAllCollectives) {
    if (rule->collective && *rule->collective != c) continue;
    if (algo::findAlgorithm(c, rule->algorithm)) return Status::ok();
  }
  std::string valid;
  for (algo::Collective c : algo::kAllCollectives) {
    if (rule->collective && *rule->collective != c) continue;
    valid += (valid.empty() ? "" : "; ") + std::string(algo::toString(c)) + ": " + algo::algorithmNames(c);
  }
  return invalidArgument("COLL_ALGO rule '" + text + "': unknown algorithm '" + rule->algorithm + "' (" + valid + ")");
}

}  // namespace

Status parseAlgoOverride(const std::string& text, std::vector<AlgoRule>* rules) {
  rules->clear();
  for (const std::string& part : split(text, ';')) {
    if (part.empty()) continue;
    AlgoRule rule;
    COLL_RETURN_IF_ERROR(parseRule(part, &rule));
    rules->push_back(rule);
  }
  return Status::ok();
}

const AlgoRule* matchRule(const std::vector<AlgoRule>& rules, algo::Collective collective, size_t bytes) {
  for (const AlgoRule& r : rules) {
    if (r.collective && *r.collective != collective) continue;
    if (!r.collective && !algo::findAlgorithm(collective, r.algorithm)) continue;
    if (bytes >= r.lo && bytes < r.hi) return &r;
  }
  return nullptr;
}

}  // namespace coll::select
