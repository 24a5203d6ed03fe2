#include "comm/ledger_exchange.h"

#include <chrono>
#include <cstring>

#include "base/log.h"

namespace coll {
namespace {

// A parked GET is re-issued this often; its timeout closes the client's connection (a
// half-read reply cannot be resumed), so the responder then reconnects.
constexpr auto kParkedGetLimit = std::chrono::minutes(30);
constexpr auto kReconnectLimit = std::chrono::seconds(10);
// One store call of the asker. Not the window's end: a call cut short by it would close the
// communicator's store connection mid-reply. A store that takes this long is itself stuck.
constexpr auto kStoreCallLimit = std::chrono::seconds(2);
// How often the asker looks for answers that have not arrived yet.
constexpr auto kAnswerPoll = std::chrono::milliseconds(5);
// How often a later asker looks for the first asker's published answers. Shorter: the first
// asker is often the store's host, and it may fail and take the store down a millisecond or two
// after publishing (netcluster.link_down once lost rank 0's answers to rank 1 that way).
constexpr auto kPublishedPoll = std::chrono::milliseconds(1);

std::string askKey(const std::string& prefix, int64_t k) { return prefix + "ledger/ask/" + std::to_string(k); }
std::string answerKey(const std::string& prefix, int64_t k, int rank) {
  return prefix + "ledger/answer/" + std::to_string(k) + "/" + std::to_string(rank);
}
std::string answeredKey(const std::string& prefix, int64_t k) {
  return prefix + "ledger/answered/" + std::to_string(k);
}
std::string allKey(const std::string& prefix, int64_t k) { return prefix + "ledger/all/" + std::to_string(k); }
std::string holdersKey(const std::string& prefix, int64_t k) {
  return prefix + "ledger/holders/" + std::to_string(k);
}

constexpr const char* kRevokePrefix = "revoke ";
constexpr const char* kClosingPrefix = "closing ";

// How long the store's host waits, after a question, for the other ranks to hold its answers.
constexpr auto kHostLinger = std::chrono::milliseconds(250);

}  // namespace

Status LedgerResponder::start(Connect connect, const std::string& key_prefix, const Ledger* ledger,
                              OnRevoke on_revoke, bootstrap::Deadline connect_deadline,
                              std::unique_ptr<LedgerResponder>* out) {
  std::unique_ptr<bootstrap::StoreClient> store;
  COLL_RETURN_IF_ERROR(connect(connect_deadline, &store));
  out->reset(new LedgerResponder(std::move(store), std::move(connect), key_prefix, ledger, std::move(on_revoke)));
  (*out)->thread_ = std::thread([r = out->get()] { r->loop(); });
  return Status::ok();
}

LedgerResponder::LedgerResponder(std::unique_ptr<bootstrap::StoreClient> store, Connect connect,
                                 std::string key_prefix, const Ledger* ledger, OnRevoke on_revoke)
    : store_(std::move(store)), connect_(std::move(connect)), key_prefix_(std::move(key_prefix)), ledger_(ledger),
      on_revoke_(std::move(on_revoke)) {}

LedgerResponder::~LedgerResponder() {
  {
    std::lock_guard<std::mutex> lock(store_mu_);
    stopping_ = true;
    store_->cancel();
  }
  if (thread_.joinable()) thread_.join();
}

// Answers questions 1, 2, 3, ... in order: each stays in the store, so one asked while this
// thread was answering the previous one is found at once.
void LedgerResponder::loop() {
  for (int64_t k = 1; !stopping_;) {
    std::string asker;
    Status st = store_->get(askKey(key_prefix_, k), &asker, bootstrap::Clock::now() + kParkedGetLimit);
    if (st.code() == ErrorCode::Timeout && !st.isOk() && !stopping_) {
      st = reconnect();
      if (st) continue;
    }
    if (!st) {
      if (!stopping_) COLL_INFO("STORE", "ledger responder stopped: %s", st.message().c_str());
      return;
    }
    if (asker.rfind(kClosingPrefix, 0) == 0) {
      COLL_INFO("STORE", "ledger responder stopped: %s closed the communicator", asker.c_str() + std::strlen(kClosingPrefix));
      peer_closed_ = true;
      return;
    }
    LedgerSnapshot mine = ledger_->snapshot();
    const auto limit = bootstrap::Clock::now() + kReconnectLimit;
    st = store_->set(answerKey(key_prefix_, k, mine.rank), mine.encode(), limit);
    int64_t answered = 0;
    if (st) st = store_->add(answeredKey(key_prefix_, k), 1, &answered, limit);
    if (st) st = store_->append(answeredListKey(key_prefix_, k), std::to_string(mine.rank), limit);
    // After the answer: it says this process lives, however long failing its ops then takes.
    if (asker.rfind(kRevokePrefix, 0) == 0 && on_revoke_) on_revoke_(k, asker.substr(std::strlen(kRevokePrefix)));
    if (!st) return;
    ++k;
  }
}

// A parked GET that timed out closed its connection. The destructor may cancel meanwhile:
// the new client is installed only if it has not.
Status LedgerResponder::reconnect() {
  std::unique_ptr<bootstrap::StoreClient> fresh;
  COLL_RETURN_IF_ERROR(connect_(bootstrap::Clock::now() + kReconnectLimit, &fresh));
  std::lock_guard<std::mutex> lock(store_mu_);
  if (stopping_) return peerLostError("ledger responder stopping");
  store_ = std::move(fresh);
  return Status::ok();
}

std::string answeredListKey(const std::string& key_prefix, int64_t question) {
  return key_prefix + "ledger/answerers/" + std::to_string(question);
}

namespace {
Status postQuestion(bootstrap::StoreClient& store, const std::string& key_prefix, const std::string& text,
                    bootstrap::Deadline deadline, int64_t* question) {
  COLL_RETURN_IF_ERROR(store.add(key_prefix + "ledger/asks", 1, question, deadline));
  return store.set(askKey(key_prefix, *question), text, deadline);
}
}  // namespace

Status postRevoke(bootstrap::StoreClient& store, const std::string& key_prefix, const std::string& why,
                  bootstrap::Deadline deadline, int64_t* question) {
  return postQuestion(store, key_prefix, kRevokePrefix + why, deadline, question);
}

Status postClosing(bootstrap::StoreClient& store, const std::string& key_prefix, int rank, bootstrap::Deadline deadline) {
  int64_t question = 0;
  return postQuestion(store, key_prefix, kClosingPrefix + format("rank %d", rank), deadline, &question);
}

namespace {

// One asker's exchange: its store calls, each with its own deadline, counted.
class Asking {
 public:
  Asking(bootstrap::StoreClient& store, const std::string& prefix, int rank, int size, bootstrap::Deadline end,
         LedgerAnswers* a)
      : store_(store), prefix_(prefix), rank_(rank), size_(size), end_(end), a_(*a) {}

  // The latest question, if it asks about `about`: 0 if there is none to share.
  int64_t sharedQuestion(uint64_t about) {
    int64_t latest = 0;
    std::string asked;
    if (about == kNotCollective || !call(store_.add(prefix_ + "ledger/asks", 0, &latest, deadline())) || latest == 0 ||
        !call(store_.get(askKey(prefix_, latest), &asked, deadline())))
      return 0;
    return asked == std::to_string(about) ? latest : 0;
  }

  int64_t ask(uint64_t about) {
    int64_t k = 0;
    if (call(store_.add(prefix_ + "ledger/asks", 1, &k, deadline())))
      call(store_.set(askKey(prefix_, k), about == kNotCollective ? "p2p" : std::to_string(about), deadline()));
    return a_.store_problem.empty() ? k : 0;
  }

  // Calls `done` (a store call that polls) every kAnswerPoll until it holds or the window ends.
  template <typename Done>
  void pollUntil(Done done, std::chrono::milliseconds every = kAnswerPoll) {
    while (a_.store_problem.empty() && !done()) {
      if (bootstrap::Clock::now() >= end_) return;
      std::this_thread::sleep_for(every);
    }
  }

  // Every rank counted in answered/<k> (its own responder included) once the window allows.
  void collectAnswers(int64_t k) {
    int64_t answered = 0;
    pollUntil([&] { return call(store_.add(answeredKey(prefix_, k), 0, &answered, deadline())) && answered >= size_; });
    for (int r = 0; r < size_ && a_.store_problem.empty(); ++r) {
      if (a_.of_rank[static_cast<size_t>(r)]) continue;
      bool exists = answered >= size_;  // all answered: no need to check first
      if (!exists && !call(store_.check(answerKey(prefix_, k, r), &exists, deadline()))) return;
      std::string bytes;
      if (exists && call(store_.get(answerKey(prefix_, k, r), &bytes, deadline())))
        a_.of_rank[static_cast<size_t>(r)] = LedgerSnapshot::decode(bytes);
    }
  }

  // Everything this asker learnt, in one value, for the ranks that ask about the same op.
  void publish(int64_t k) {
    std::string all;
    for (const auto& s : a_.of_rank) all += s ? s->encode() : std::string(LedgerSnapshot::encodedBytes(), '\0');
    call(store_.set(allKey(prefix_, k), all, deadline()));
  }

  // Counts this rank among the holders of question k's answers. The store's host then waits,
  // at most kHostLinger, until every rank that answered holds them too: it is about to take the
  // store down with its failed communicator, and the others are reading the answers from there
  // (netcluster.link_down: rank 0 published, failed and closed the store while ranks 1 and 3
  // still polled for its answers, and they could then not name the rank that was cut off).
  void hold(int64_t k, bool hosts_store) {
    int64_t holders = 0;
    if (!call(store_.add(holdersKey(prefix_, k), 1, &holders, deadline())) || !hosts_store) return;
    int answered = 0;
    for (const auto& s : a_.of_rank) answered += s ? 1 : 0;
    const auto until = bootstrap::Clock::now() + kHostLinger;
    while (holders < answered && bootstrap::Clock::now() < until) {
      std::this_thread::sleep_for(kPublishedPoll);
      if (!call(store_.add(holdersKey(prefix_, k), 0, &holders, deadline()))) return;
    }
  }

  // The first asker's published answers; false if they did not come within the window.
  bool readPublished(int64_t k) {
    bool exists = false;
    pollUntil([&] { return call(store_.check(allKey(prefix_, k), &exists, deadline())) && exists; }, kPublishedPoll);
    std::string all;
    const size_t each = LedgerSnapshot::encodedBytes();
    if (!exists || !call(store_.get(allKey(prefix_, k), &all, deadline())) || all.size() != each * size_) return false;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) a_.of_rank[static_cast<size_t>(r)] = LedgerSnapshot::decode(all.substr(each * r, each));
    a_.reused = true;
    return true;
  }

 private:
  // One store call of the asker. Not the window's end: a call cut short by it would close
  // the communicator's store connection mid-reply.
  static bootstrap::Deadline deadline() { return bootstrap::Clock::now() + kStoreCallLimit; }
  bool call(const Status& st) {
    ++a_.store_calls;
    if (!st && a_.store_problem.empty()) a_.store_problem = st.message();
    return st.isOk();
  }

  bootstrap::StoreClient& store_;
  const std::string& prefix_;
  int rank_, size_;
  bootstrap::Deadline end_;
  LedgerAnswers& a_;
};

}  // namespace

LedgerAnswers askLedgers(bootstrap::StoreClient& store, const std::string& key_prefix, int rank, int size,
                         const LedgerSnapshot& mine, uint64_t about, bootstrap::Deadline window_end,
                         bool hosts_store) {
  LedgerAnswers a;
  a.of_rank.resize(static_cast<size_t>(size));
  a.of_rank[static_cast<size_t>(rank)] = mine;
  Asking asking(store, key_prefix, rank, size, window_end, &a);
  int64_t k = asking.sharedQuestion(about);
  if (k > 0 && asking.readPublished(k)) {
    asking.hold(k, hosts_store);
    return a;
  }
  if (k == 0) k = asking.ask(about);
  if (k == 0) return a;  // the store could not be asked: store_problem says why
  asking.collectAnswers(k);
  if (!a.store_problem.empty()) return a;
  asking.publish(k);
  asking.hold(k, hosts_store);
  return a;
}

}  // namespace coll
