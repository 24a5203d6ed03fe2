#include "comm/agreement.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "base/log.h"

namespace coll {
namespace {

// How often a waiting rank reads the votes: from 1 ms, doubling to 20 ms, so an agreement
// among live ranks costs a few milliseconds and a long wait a few store calls a second.
constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kLongestPoll = std::chrono::milliseconds(20);
// One store call's limit, apart from the waiting's deadline (the decision is proposed after
// it). A store slower than this is itself stuck.
constexpr auto kStoreCallLimit = std::chrono::seconds(2);

struct Vote {
  uint64_t value = 0;
  std::vector<int> suspected;
};

std::string encodeRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s.empty() ? "-" : s;
}

bool decodeRanks(const std::string& s, int size, std::vector<int>* ranks) {
  ranks->clear();
  if (s == "-") return true;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    long r = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || r < 0 || r >= size) return false;
    ranks->push_back(static_cast<int>(r));
  }
  return true;
}

// A vote: "<rank> <value> <suspected>"; a decision: "<value> <failed>".
std::string encodeVote(int rank, uint64_t value, const std::vector<int>& suspected) {
  return std::to_string(rank) + " " + std::to_string(value) + " " + encodeRanks(suspected);
}

bool decodeVote(const std::string& item, int size, int* rank, Vote* vote) {
  std::stringstream in(item);
  std::string ranks;
  if (!(in >> *rank >> vote->value >> ranks) || *rank < 0 || *rank >= size) return false;
  return decodeRanks(ranks, size, &vote->suspected);
}

class Agreement {
 public:
  Agreement(bootstrap::StoreClient& store, const AgreementCall& call) : store_(store), c_(call) {}
  bool excluded() const { return excluded_; }

  Status run(AgreementResult* out) {
    COLL_RETURN_IF_ERROR(store_.append(votesKey(), encodeVote(c_.rank, c_.value, c_.suspected), call()));
    std::string decision;
    COLL_RETURN_IF_ERROR(waitForEveryone(&decision));
    if (decision.empty())
      COLL_RETURN_IF_ERROR(store_.setIfAbsent(decisionKey(), propose(), &decision, call()));
    return read(decision, out);
  }

 private:
  static bootstrap::Deadline call() { return bootstrap::Clock::now() + kStoreCallLimit; }
  std::string votesKey() const { return c_.key + "votes"; }
  std::string decisionKey() const { return c_.key + "decision"; }

  // Returns when every rank has voted or is known failed, when the deadline passes, or when
  // another rank has decided (*decision: its decision).
  Status waitForEveryone(std::string* decision) {
    for (auto poll = kFirstPoll;; poll = std::min(2 * poll, std::chrono::duration_cast<std::chrono::milliseconds>(kLongestPoll))) {
      bool decided = false;
      COLL_RETURN_IF_ERROR(store_.check(decisionKey(), &decided, call()));
      if (decided) return store_.get(decisionKey(), decision, call());
      COLL_RETURN_IF_ERROR(readVotes());
      if (everyoneAccounted() || bootstrap::Clock::now() >= c_.deadline) return Status::ok();
      std::this_thread::sleep_for(poll);
    }
  }

  Status readVotes() {
    std::vector<std::string> items;
    COLL_RETURN_IF_ERROR(store_.readList(votesKey(), &items, call()));
    for (const std::string& item : items) {
      int rank = -1;
      Vote vote;
      if (!decodeVote(item, c_.size, &rank, &vote)) return internalError(c_.what + ": a malformed vote in the store: " + item);
      votes_.emplace(rank, std::move(vote));
    }
    COLL_RETURN_IF_ERROR(readRanks(c_.gone_key, &gone_));
    if (!c_.answered_key.empty()) COLL_RETURN_IF_ERROR(readRanks(c_.answered_key, &answered_));
    return Status::ok();
  }

  Status readRanks(const std::string& key, std::set<int>* ranks) {
    if (key.empty()) return Status::ok();
    std::vector<std::string> items;
    COLL_RETURN_IF_ERROR(store_.readList(key, &items, call()));
    for (const std::string& item : items) {
      char* end = nullptr;
      long r = std::strtol(item.c_str(), &end, 10);
      if (!item.empty() && *end == '\0' && r >= 0 && r < c_.size) ranks->insert(static_cast<int>(r));
    }
    return Status::ok();
  }

  bool knownFailed(int r) const {
    if (gone_.count(r)) return true;
    if (!c_.answered_key.empty() && bootstrap::Clock::now() >= c_.probe_end && !answered_.count(r)) return true;
    if (std::find(c_.suspected.begin(), c_.suspected.end(), r) != c_.suspected.end()) return true;
    for (const auto& [voter, vote] : votes_)
      if (std::find(vote.suspected.begin(), vote.suspected.end(), r) != vote.suspected.end()) return true;
    return false;
  }

  bool everyoneAccounted() const {
    for (int r = 0; r < c_.size; ++r)
      if (!votes_.count(r) && !knownFailed(r)) return false;
    return true;
  }

  // Failed: every rank without a vote, and every voter whose presence has ended since (it
  // voted, then died). A voter another reports is alive after all: it voted.
  std::string propose() const {
    uint64_t value = ~uint64_t{0};
    std::vector<int> failed;
    for (int r = 0; r < c_.size; ++r) {
      auto it = votes_.find(r);
      if (it == votes_.end() || gone_.count(r)) failed.push_back(r);
      else value &= it->second.value;
    }
    return std::to_string(value) + " " + encodeRanks(failed);
  }

  Status read(const std::string& decision, AgreementResult* out) {
    std::stringstream in(decision);
    std::string failed;
    if (!(in >> out->value >> failed) || !decodeRanks(failed, c_.size, &out->failed))
      return internalError(c_.what + ": a malformed decision in the store: " + decision);
    if (std::binary_search(out->failed.begin(), out->failed.end(), c_.rank)) {
      excluded_ = true;
      return peerLostError(format("%s: the survivors went on without rank %d: they decided that ranks %s had failed "
                                  "(this rank voted after they had decided, or died to them meanwhile); it is not "
                                  "part of what they make next and must leave the job",
                                  c_.what.c_str(), c_.rank, rankSet(out->failed).c_str()));
    }
    return Status::ok();
  }

  bootstrap::StoreClient& store_;
  const AgreementCall& c_;
  std::map<int, Vote> votes_;
  std::set<int> gone_, answered_;
  bool excluded_ = false;  // the decision counts this rank failed
};

}  // namespace

std::string rankSet(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  std::string s = "{";
  for (size_t i = 0; i < sorted.size(); ++i) s += (i ? "," : "") + std::to_string(sorted[i]);
  return s + "}";
}

Status agree(bootstrap::StoreClient& store, const AgreementCall& call, AgreementResult* out) {
  Agreement agreement(store, call);
  Status st = agreement.run(out);
  if (st || agreement.excluded()) return st;
  return Status(st.code(), format("%s (rank %d of %d): through the store: %s", call.what.c_str(), call.rank, call.size,
                                  st.message().c_str()), st.peer());
}

}  // namespace coll
