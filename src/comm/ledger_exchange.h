// How ranks read each other's ledgers after a failure, through the rendezvous store.
//
// Asking costs nothing until something fails: each rank keeps one extra store connection on
// which a responder thread is parked in a GET for the next question. A rank whose op failed
// takes a question number k from a counter and sets "<prefix>ledger/ask/<k>" to the collective
// it asks about; every live responder answers with its snapshot under
// "<prefix>ledger/answer/<k>/<rank>" and counts itself in "<prefix>ledger/answered/<k>". The
// asker polls that one counter (not every answer), reads each answer once, and publishes them
// all together under "<prefix>ledger/all/<k>". A rank failing in the same collective a moment
// later (they all do, once one aborts) reuses the question and reads that one key. So a
// failure costs O(n) store calls however many ranks ask, where polling every answer from
// every asker cost O(n^2) per poll. A rank that is stopped (SIGSTOP), dead, or whose process
// is wedged does not answer within the window and is reported as such. Every store call
// carries a deadline; the window bounds the whole exchange.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "comm/ledger.h"

namespace coll {

// Answers other ranks' questions for as long as it lives. Its own thread and store client.
class LedgerResponder {
 public:
  // Opens a store connection of its own (a parked GET must not block the communicator's).
  using Connect = std::function<Status(bootstrap::Deadline, std::unique_ptr<bootstrap::StoreClient>*)>;
  // on_revoke: called on this thread with the question's number and the revoker's words when
  // a question is a revoke (postRevoke), after the answer (which says this rank is alive).
  using OnRevoke = std::function<void(int64_t question, const std::string& why)>;
  static Status start(Connect connect, const std::string& key_prefix, const Ledger* ledger, OnRevoke on_revoke,
                      bootstrap::Deadline connect_deadline, std::unique_ptr<LedgerResponder>* out);
  ~LedgerResponder();  // cancels the parked GET and joins the thread: returns promptly
  // Whether another rank closed the communicator (postClosing): this responder has stopped.
  bool peerClosed() const { return peer_closed_; }

 private:
  LedgerResponder(std::unique_ptr<bootstrap::StoreClient> store, Connect connect, std::string key_prefix,
                  const Ledger* ledger, OnRevoke on_revoke);
  void loop();
  Status reconnect();

  std::mutex store_mu_;  // guards replacing store_ against cancel() from the destructor
  std::unique_ptr<bootstrap::StoreClient> store_;
  Connect connect_;
  std::string key_prefix_;
  const Ledger* ledger_;
  OnRevoke on_revoke_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> peer_closed_{false};
  std::thread thread_;
};

// Revoking through the responders: the revoke is a question ("revoke <why>") that every live
// responder sees at once (each is parked on the next question's key); each answers, appending
// its rank to the list answeredListKey(k), then calls its on_revoke. Returns k. The caller owns
// the store client (not the progress thread's: revoke runs on the caller's thread).
Status postRevoke(bootstrap::StoreClient& store, const std::string& key_prefix, const std::string& why,
                  bootstrap::Deadline deadline, int64_t* question);
// A rank closing a healthy communicator says so as a question every responder sees; each stops
// there, without answering. So a job's last ranks stop polling the store before its host's
// process ends (a store that went away made torch's TCPStore log its failure, with a C++
// backtrace, on every rank still in its group), and a rank that saw it need not post again.
Status postClosing(bootstrap::StoreClient& store, const std::string& key_prefix, int rank, bootstrap::Deadline deadline);
// The list of the ranks whose responders answered question k.
std::string answeredListKey(const std::string& key_prefix, int64_t question);

struct LedgerAnswers {
  std::vector<std::optional<LedgerSnapshot>> of_rank;  // nullopt: did not answer in the window
  std::string store_problem;  // why the store could not be asked at all (empty: it could)
  int store_calls = 0;        // the asker's, for the cost figures (responders make 2 each)
  bool reused = false;        // another rank's question about the same collective was read
};

// Asks every other rank (caller's own snapshot goes in as `mine`) about collective `about`
// (kNotCollective: point-to-point, never shared) and collects what arrives before window_end.
// Progress thread (it uses the communicator's store client). hosts_store: this rank runs the
// store, and waits (at most 250 ms) for the other ranks to hold the answers before returning.
LedgerAnswers askLedgers(bootstrap::StoreClient& store, const std::string& key_prefix, int rank, int size,
                         const LedgerSnapshot& mine, uint64_t about, bootstrap::Deadline window_end,
                         bool hosts_store = false);

}  // namespace coll
