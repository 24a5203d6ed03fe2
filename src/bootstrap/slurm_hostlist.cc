#include "bootstrap/slurm_hostlist.h"

#include <cstdlib>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

// Splits at commas that are not inside brackets.
std::vector<std::string> splitTop(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

Status expandRange(const std::string& prefix, const std::string& range, const std::string& suffix,
                   std::vector<std::string>* out) {
  size_t dash = range.find('-');
  std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
  char* e1 = nullptr;
  char* e2 = nullptr;
  long a = std::strtol(lo.c_str(), &e1, 10), b = std::strtol(hi.c_str(), &e2, 10);
  if (lo.empty() || *e1 || *e2 || b < a || b - a > 100000) return invalidArgument("bad host range '" + range + "'");
  if (out->size() + static_cast<size_t>(b - a) + 1 > kMaxHostListHosts)
    return invalidArgument(format("host list expands to more than %zu hosts", kMaxHostListHosts));
  // Counted, not `i <= b`: with b == LONG_MAX ("n[9223372036854775807]") ++i would overflow.
  for (long k = 0; k <= b - a; ++k) {
    std::string num = std::to_string(a + k);
    if (num.size() < lo.size()) num = std::string(lo.size() - num.size(), '0') + num;
    out->push_back(prefix + num + suffix);
  }
  return Status::ok();
}

}  // namespace

Status expandHostList(const std::string& list, std::vector<std::string>* hosts) {
  for (const std::string& part : splitTop(list)) {
    size_t open = part.find('[');
    if (open == std::string::npos) {
      hosts->push_back(part);
      continue;
    }
    size_t close = part.find(']', open);
    if (close == std::string::npos) return invalidArgument("unbalanced '[' in host list '" + list + "'");
    std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
    std::string inner = part.substr(open + 1, close - open - 1);
    for (const std::string& range : splitTop(inner)) COLL_RETURN_IF_ERROR(expandRange(prefix, range, suffix, hosts));
  }
  if (hosts->empty()) return invalidArgument("empty host list");
  return Status::ok();
}

Status firstHostOfList(const std::string& list, std::string* host) {
  std::vector<std::string> hosts;
  COLL_RETURN_IF_ERROR(expandHostList(list, &hosts));
  *host = hosts.front();
  return Status::ok();
}

}  // namespace coll::bootstrap
