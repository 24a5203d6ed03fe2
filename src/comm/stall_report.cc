#include "comm/stall_report.h"

#include <set>

#include "base/log.h"

namespace coll {
namespace {

// A failed peer's own error can be long; enough of it to show the cause (a mismatch found on
// the wire names both calls and what differs: about 200 characters).
constexpr size_t kPeerErrorChars = 320;
constexpr size_t kMaxPeerErrors = 1;

struct Groups {
  std::vector<int> not_started, in_it, failed_in_it, finished, silent, other_call;
  std::vector<std::string> whereabouts;  // one per not_started rank, in order
  std::vector<std::string> other_calls;  // one per other_call rank
  std::vector<std::string> peer_errors;
};

// "rank 5 (host h3) is ...", "ranks 5 and 9 are ...".
std::string plural(const std::vector<int>& ranks, const char* one, const char* many, const std::string& hosts = "") {
  return std::string(ranks.size() == 1 ? "rank " : "ranks ") + rankList(ranks) + hosts + " " +
         (ranks.size() == 1 ? one : many);
}

std::string hostsOf(const std::vector<int>& ranks, const std::vector<std::string>& host_of_rank) {
  std::set<std::string> all(host_of_rank.begin(), host_of_rank.end()), named;
  if (all.size() < 2) return "";  // one host: naming it says nothing
  for (int r : ranks)
    if (static_cast<size_t>(r) < host_of_rank.size()) named.insert(host_of_rank[r].substr(0, host_of_rank[r].find_first_of("/#")));
  std::string s = named.size() == 1 ? " (host " : " (hosts ";
  for (auto it = named.begin(); it != named.end(); ++it) s += (it == named.begin() ? "" : ", ") + *it;
  return s + ")";
}

// Where a rank that has not started the op is instead ("is still in broadcast #41").
std::string whereabouts(const LedgerSnapshot& s, uint64_t collective) {
  if (s.busy) return "is still in " + s.current.label();
  std::string last = s.has_last ? "last ran " + s.last.label() : "has run nothing yet";
  if (!s.p2p.empty()) last += "; waits in " + s.p2p;
  if (s.collectives_issued <= collective) return "has not called it (" + last + ")";
  return "has it queued (" + last + ")";
}

// A peer's own error is worth quoting when it found a cause itself, not when it only
// learned of someone else's failure (its text then says "aborted").
bool isOriginalError(const std::string& error) { return error.find("aborted") == std::string::npos; }

void classify(const LedgerSnapshot& s, const LedgerEntry& op, Groups* g) {
  const uint64_t c = op.collective;
  if (s.failed && isOriginalError(s.error) && g->peer_errors.size() < kMaxPeerErrors)
    g->peer_errors.push_back(format("rank %d failed: %s", s.rank, s.error.substr(0, kPeerErrorChars).c_str()));
  if (c == kNotCollective) {  // point-to-point or a group: only what the peer is doing
    g->not_started.push_back(s.rank);
    g->whereabouts.push_back(s.busy ? "is in " + s.current.label() : whereabouts(s, 0));
    return;
  }
  // The peer's own call of this collective number, if it is in it or has just left it: a
  // mismatch found on the wire (base/wire_tag.h) is named here with both exact calls.
  const bool in_it = s.busy && s.current.collective == c;
  const LedgerEntry* its = in_it ? &s.current : s.has_last && s.last.collective == c ? &s.last : nullptr;
  if (its && !(its->fingerprint == op.fingerprint)) {
    g->other_call.push_back(s.rank);
    g->other_calls.push_back(format("rank %d called %s", s.rank, its->fingerprint.describe().c_str()));
  } else if (s.collectives_completed > c) {
    g->finished.push_back(s.rank);
  } else if (in_it) {
    g->in_it.push_back(s.rank);
  } else if (s.collectives_started <= c) {
    g->not_started.push_back(s.rank);
    g->whereabouts.push_back(whereabouts(s, c));
  } else {
    g->failed_in_it.push_back(s.rank);  // started it, no longer in it, not completed
  }
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

}  // namespace

std::string rankList(const std::vector<int>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j >= i + 2) {
      runs.push_back(format("%d-%d", ranks[i], ranks[j]));
      i = j + 1;
    } else {
      runs.push_back(format("%d", ranks[i]));
      ++i;
    }
  }
  if (runs.size() < 2) return joined(runs, "");
  std::string last = runs.back();
  runs.pop_back();
  return joined(runs, ", ") + " and " + last;
}

std::string describeStall(const LedgerEntry& op, int self, const LedgerAnswers& answers,
                          const std::vector<std::string>& host_of_rank) {
  Groups g;
  for (size_t r = 0; r < answers.of_rank.size(); ++r) {
    if (static_cast<int>(r) == self) continue;
    if (!answers.of_rank[r]) g.silent.push_back(static_cast<int>(r));
    else classify(*answers.of_rank[r], op, &g);
  }
  std::vector<std::string> parts;
  const bool collective = op.collective != kNotCollective;
  if (!g.not_started.empty()) {
    // One rank: "rank 5 has not started it: it is still in ..."; several: each one named.
    std::vector<std::string> where;
    for (size_t i = 0; i < g.not_started.size(); ++i)
      where.push_back((g.not_started.size() == 1 ? std::string("it ") : format("rank %d ", g.not_started[i])) +
                      g.whereabouts[i]);
    std::string hosts = hostsOf(g.not_started, host_of_rank);
    std::string head = collective ? plural(g.not_started, "has not started it", "have not started it", hosts)
                                  : (g.not_started.size() == 1 ? format("rank %d", g.not_started[0]) : "peers") + hosts;
    parts.push_back(head + ": " + joined(where, ", "));
  }
  if (!g.other_call.empty())
    parts.push_back(format("mismatch: this rank called %s, ", op.fingerprint.describe().c_str()) + joined(g.other_calls, ", "));
  if (!answers.store_problem.empty()) {
    parts.push_back("could not ask the other ranks: " + answers.store_problem);
  } else if (!g.silent.empty()) {
    parts.push_back(plural(g.silent, "did not answer (stopped or dead)", "did not answer (stopped or dead)",
                           hostsOf(g.silent, host_of_rank)));
  }
  if (!g.in_it.empty()) parts.push_back(plural(g.in_it, "is in it too", "are in it too"));
  if (!g.failed_in_it.empty()) parts.push_back(plural(g.failed_in_it, "failed in it too", "failed in it too"));
  if (!g.finished.empty()) parts.push_back(plural(g.finished, "finished it", "finished it"));
  for (const std::string& e : g.peer_errors) parts.push_back(e);
  return "ledger: " + joined(parts, "; ");
}

}  // namespace coll
