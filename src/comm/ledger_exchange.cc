#include "comm/ledger_exchange.h"

#include <chrono>

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

std::string askKey(const std::string& prefix, int64_t k) { return prefix + "ledger/ask/" + std::to_string(k); }
std::string answerKey(const std::string& prefix, int64_t k, int rank) {
  return prefix + "ledger/answer/" + std::to_string(k) + "/" + std::to_string(rank);
}

}  // namespace

Status LedgerResponder::start(Connect connect, const std::string& key_prefix, const Ledger* ledger,
                              bootstrap::Deadline connect_deadline, std::unique_ptr<LedgerResponder>* out) {
  std::unique_ptr<bootstrap::StoreClient> store;
  COLL_RETURN_IF_ERROR(connect(connect_deadline, &store));
  out->reset(new LedgerResponder(std::move(store), std::move(connect), key_prefix, ledger));
  (*out)->thread_ = std::thread([r = out->get()] { r->loop(); });
  return Status::ok();
}

LedgerResponder::LedgerResponder(std::unique_ptr<bootstrap::StoreClient> store, Connect connect,
                                 std::string key_prefix, const Ledger* ledger)
    : store_(std::move(store)), connect_(std::move(connect)), key_prefix_(std::move(key_prefix)), ledger_(ledger) {}

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
    LedgerSnapshot mine = ledger_->snapshot();
    st = store_->set(answerKey(key_prefix_, k, mine.rank), mine.encode(), bootstrap::Clock::now() + kReconnectLimit);
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

LedgerAnswers askLedgers(bootstrap::StoreClient& store, const std::string& key_prefix, int rank, int size,
                         const LedgerSnapshot& mine, bootstrap::Deadline window_end) {
  LedgerAnswers a;
  a.of_rank.resize(static_cast<size_t>(size));
  a.of_rank[static_cast<size_t>(rank)] = mine;
  int64_t k = 0;
  auto callDeadline = [] { return bootstrap::Clock::now() + kStoreCallLimit; };
  Status st = store.add(key_prefix + "ledger/asks", 1, &k, callDeadline());
  if (st) st = store.set(askKey(key_prefix, k), std::to_string(rank), callDeadline());
  if (!st) {
    a.store_problem = st.message();
    return a;
  }
  int missing = size - 1;
  while (missing > 0 && bootstrap::Clock::now() < window_end) {
    for (int r = 0; r < size && st; ++r) {
      if (a.of_rank[static_cast<size_t>(r)]) continue;
      bool exists = false;
      std::string bytes;
      st = store.check(answerKey(key_prefix, k, r), &exists, callDeadline());
      if (st && exists) st = store.get(answerKey(key_prefix, k, r), &bytes, callDeadline());
      if (st && exists) {
        a.of_rank[static_cast<size_t>(r)] = LedgerSnapshot::decode(bytes);
        --missing;
      }
    }
    if (!st) {
      a.store_problem = st.message();
      break;
    }
    if (missing > 0) std::this_thread::sleep_for(kAnswerPoll);
  }
  return a;
}

}  // namespace coll
