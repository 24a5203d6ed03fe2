#include "transport/network_choice.h"

#include <filesystem>
#include <sstream>

#include "bootstrap/store.h"
#include "base/log.h"

namespace coll::transport {
namespace {

std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

// The first rank lacking a transport, with its own reason.
std::string firstWithout(const std::vector<NetworkCaps>& caps, bool NetworkCaps::*has,
                         std::string NetworkCaps::*why) {
  for (size_t r = 0; r < caps.size(); ++r)
    if (!(caps[r].*has)) return format("rank %zu: %s", r, (caps[r].*why).c_str());
  return "";
}

struct Candidate {
  const char* name;
  bool NetworkCaps::*has;
  std::string NetworkCaps::*why;
};
constexpr Candidate kPreferred[] = {{"verbs", &NetworkCaps::verbs, &NetworkCaps::why_not_verbs},
                                    {"ucx", &NetworkCaps::ucx, &NetworkCaps::why_not_ucx}};

}  // namespace

std::string NetworkCaps::encode() const {
  return format("%d %d\n%s\n%s", verbs ? 1 : 0, ucx ? 1 : 0, oneLine(why_not_verbs).c_str(),
                oneLine(why_not_ucx).c_str());
}

bool NetworkCaps::decode(const std::string& text, NetworkCaps* out) {
  std::istringstream in(text);
  int v = -1, u = -1;
  std::string rest;
  if (!(in >> v >> u) || (v != 0 && v != 1) || (u != 0 && u != 1)) return false;
  std::getline(in, rest);
  std::getline(in, out->why_not_verbs);
  std::getline(in, out->why_not_ucx);
  out->verbs = v == 1;
  out->ucx = u == 1;
  return true;
}

Status agreeOnNetwork(const std::vector<NetworkCaps>& caps, const std::string& wanted, NetworkChoice* out) {
  if (!wanted.empty() && wanted != "socket" && wanted != "ucx" && wanted != "verbs")
    return invalidArgument(format("COLL_NET=%s: unknown network transport (socket, ucx, verbs)", wanted.c_str()));
  if (wanted == "socket") {
    *out = {"socket", "COLL_NET=socket"};
    return Status::ok();
  }
  std::string passed_over;
  for (const Candidate& c : kPreferred) {
    if (!wanted.empty() && wanted != c.name) continue;
    std::string missing = firstWithout(caps, c.has, c.why);
    if (missing.empty()) {
      *out = {c.name, wanted.empty() ? (passed_over.empty() ? "preferred" : passed_over) : "COLL_NET=" + wanted};
      return Status::ok();
    }
    if (!wanted.empty()) return unsupportedError(format("COLL_NET=%s, but %s", c.name, missing.c_str()));
    passed_over += format("%s%s: %s", passed_over.empty() ? "" : "; ", c.name, missing.c_str());
  }
  *out = {"socket", passed_over};
  return Status::ok();
}

bool rdmaDevicePresent(std::string* why_not) {
  std::error_code ec;
  const std::filesystem::path dir = "/sys/class/infiniband";
  std::filesystem::directory_iterator it(dir, ec);
  if (!ec && it != std::filesystem::directory_iterator()) return true;
  *why_not = "no RDMA device for UCX to use (/sys/class/infiniband is empty or absent)";
  return false;
}

Status exchangeNetworkChoice(const PeerDirectory& dir, const NetworkCaps& mine, const std::string& wanted,
                             Deadline deadline, NetworkChoice* out) {
  const std::string key = dir.key_prefix + "net/caps/";
  COLL_RETURN_IF_ERROR(dir.store->set(key + std::to_string(dir.rank), mine.encode(), deadline));
  if (dir.rank == 0) {
    std::vector<NetworkCaps> caps(dir.size);
    for (int r = 0; r < dir.size; ++r) {
      std::string text;
      Status st = dir.store->get(key + std::to_string(r), &text, deadline);
      if (!st) return Status(st.code(), format("network choice: rank %d: %s", r, st.message().c_str()), r);
      if (!NetworkCaps::decode(text, &caps[r]))
        return internalError(format("network choice: rank %d published an unreadable card", r));
    }
    NetworkChoice choice;
    Status agreed = agreeOnNetwork(caps, wanted, &choice);
    // Every rank learns the outcome, a refusal included, so none waits for a choice never made.
    std::string verdict = agreed ? "ok\n" + choice.transport + "\n" + oneLine(choice.why) : "error\n" + agreed.message();
    COLL_RETURN_IF_ERROR(dir.store->set(key + "agreed", verdict, deadline));
  }
  std::string verdict;
  COLL_RETURN_IF_ERROR(dir.store->get(key + "agreed", &verdict, deadline));
  std::istringstream in(verdict);
  std::string head, first, second;
  std::getline(in, head);
  std::getline(in, first);
  if (head != "ok") return unsupportedError(first);
  std::getline(in, second);
  *out = {first, second};
  return Status::ok();
}

}  // namespace coll::transport
