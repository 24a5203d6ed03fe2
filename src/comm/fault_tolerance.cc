// What a communicator's survivors use to go on after a failure, with ULFM's guarantees:
// failedRanks (MPIX_Comm_get_failed), agree (MPIX_Comm_agree), revoke (MPIX_Comm_revoke),
// shrink without a list (MPIX_Comm_shrink), and growing back (grow, join: comm/grow.h). The
// store is the arbiter (comm/agreement.h); it must outlive the ranks that fail, as collrun's
// does (a rank that serves the store takes the job's memory of who is alive with it).
#include <algorithm>

#include "base/log.h"
#include "bootstrap/external_store.h"
#include "bootstrap/store_port_range.h"
#include "comm/communicator_impl.h"
#include "comm/grow.h"
#include "comm/ledger_exchange.h"
#include "comm/shrink.h"

namespace coll {
namespace {

// The longest one store call of these may take: a store that takes longer is itself stuck.
constexpr auto kStoreCallLimit = std::chrono::seconds(5);

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(bootstrap::Clock::now().time_since_epoch()).count();
}

}  // namespace

Status CommunicatorImpl::announcePresence() {
  std::unique_ptr<bootstrap::StoreClient> presence;
  const auto deadline = transport::Clock::now() + config_.timeout;
  COLL_RETURN_IF_ERROR(storeConnector()(deadline, &presence));
  Status st = presence->appendWhenClosed(goneKey(), std::to_string(rank_), deadline);
  if (st.code() == ErrorCode::Unsupported && !st) {
    COLL_INFO("INIT", "rank %d: %s: a dead rank is found by its peers' errors and agreement deadlines only",
              rank_, st.message().c_str());
    return Status::ok();
  }
  COLL_RETURN_IF_ERROR(st);
  presence_ = std::move(presence);
  return Status::ok();
}

Status CommunicatorImpl::withFtStore(const std::function<Status(bootstrap::StoreClient&)>& call) {
  std::lock_guard<std::mutex> lock(ft_mu_);
  if (!ft_store_) COLL_RETURN_IF_ERROR(storeConnector()(transport::Clock::now() + kStoreCallLimit, &ft_store_));
  Status st = call(*ft_store_);
  if (!st && st.code() != ErrorCode::InvalidArgument) ft_store_.reset();  // a broken exchange: reconnect next time
  return st;
}

std::vector<int> CommunicatorImpl::failedRanks() {
  std::set<int> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = silent_ranks_;
  }
  std::vector<std::string> gone;
  Status st = withFtStore([&](bootstrap::StoreClient& store) {
    return store.readList(goneKey(), &gone, transport::Clock::now() + kStoreCallLimit);
  });
  if (!st) COLL_WARN("STORE", "rank %d: failedRanks: the store cannot be asked (%s); only what this rank saw itself",
                     rank_, st.message().c_str());
  for (const std::string& item : gone) {
    int r = std::atoi(item.c_str());
    if (r >= 0 && r < size_ && r != rank_) failed.insert(r);
  }
  return {failed.begin(), failed.end()};
}

// The agreement waits this long for a rank nobody reports failed: every live rank's failing op
// ends within COLL_TIMEOUT of its start plus the ledger's window, and then it can vote.
AgreementCall CommunicatorImpl::agreementCall(const std::string& key, const std::string& what) {
  AgreementCall call;
  call.key = key;
  call.gone_key = goneKey();
  call.rank = rank_;
  call.size = size_;
  call.suspected = failedRanks();
  const auto timeout = config_.timeout;
  call.deadline = transport::Clock::now() + timeout + std::max<transport::Clock::duration>(timeout / 2, std::chrono::seconds(5));
  call.what = what;
  return call;
}

Status CommunicatorImpl::agree(uint64_t value, AgreementResult* out) {
  refuseInForkedChild("agree");
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(ft_mu_);
    n = ++agreements_;
  }
  AgreementCall call = agreementCall(key_prefix_ + "agree/" + std::to_string(n) + "/", format("agree #%llu", static_cast<unsigned long long>(n)));
  call.value = value;
  return withFtStore([&](bootstrap::StoreClient& store) { return coll::agree(store, call, out); });
}

void CommunicatorImpl::revokedBy(int64_t question, const std::string& why) {
  int64_t none = 0;
  if (revoke_question_.compare_exchange_strong(none, question)) revoke_seen_ns_ = nowNs();
  fail(Error(ErrorCode::PeerLost, format("rank %d: communicator revoked %s", rank_, why.c_str())));
}

Status CommunicatorImpl::revoke(const std::string& why) {
  refuseInForkedChild("revoke");
  const std::string words = format("by rank %d (%s)", rank_, why.c_str());
  int64_t question = 0;
  Status st = withFtStore([&](bootstrap::StoreClient& store) {
    return postRevoke(store, key_prefix_, words, transport::Clock::now() + kStoreCallLimit, &question);
  });
  // Here at once, whether or not the others could be told: this rank's ops must fail now.
  revokedBy(question, words);
  if (!st) return Status(st.code(), format("revoke (rank %d of %d): the other ranks could not be told through the store: %s",
                                           rank_, size_, st.message().c_str()));
  return Status::ok();
}

Status CommunicatorImpl::shrinkToSurvivors(std::unique_ptr<CommunicatorImpl>* out) {
  refuseInForkedChild("shrink");
  const uint64_t generation = ++shrinks_;
  const std::string what = format("shrink #%llu", static_cast<unsigned long long>(generation));
  // Every live rank must come and vote: the revoke fails whatever it is waiting in, and its
  // responder's answer says it is alive. One revoke is enough; a rank that saw one reuses it.
  if (revoke_question_.load() == 0) COLL_RETURN_IF_ERROR(revoke("to shrink the communicator"));
  AgreementCall call = agreementCall(key_prefix_ + "shrink" + std::to_string(generation) + "/agree/", what);
  call.value = 0;
  if (revoke_question_.load() > 0) {
    // Live responders answer within milliseconds; one silent for this long is stopped or dead.
    // Not shorter than a second: a loaded host delays a thread that long now and then.
    const auto window = std::clamp<transport::Clock::duration>(config_.timeout / 2, std::chrono::seconds(1),
                                                               std::chrono::seconds(5));
    call.answered_key = answeredListKey(key_prefix_, revoke_question_.load());
    call.probe_end = bootstrap::Clock::time_point(std::chrono::nanoseconds(revoke_seen_ns_.load())) + window;
  }
  AgreementResult result;
  COLL_RETURN_IF_ERROR(withFtStore([&](bootstrap::StoreClient& store) { return coll::agree(store, call, &result); }));
  CommOptions plan;
  COLL_RETURN_IF_ERROR(planShrink(options_, rank_, size_, result.failed, generation, &plan));
  COLL_INFO("INIT", "rank %d of %d: %s: the survivors agree that ranks %s failed; this rank becomes rank %d of %d as '%s'",
            rank_, size_, what.c_str(), rankSet(result.failed).c_str(), plan.rank, plan.size, plan.name.c_str());
  return create(plan, config_, out, store_server_);
}

Status CommunicatorImpl::grow(std::unique_ptr<CommunicatorImpl>* out) {
  refuseInForkedChild("grow");
  if (std::optional<Error> failed = firstError())
    return invalidArgument(format("grow (rank %d of %d): this communicator has failed (%s): shrink() to the survivors "
                                  "first, then grow the communicator shrink() returns", rank_, size_, failed->what()));
  const uint64_t generation = ++grows_;
  std::vector<std::string> joiners;
  CommOptions plan;
  COLL_RETURN_IF_ERROR(withFtStore([&](bootstrap::StoreClient& store) {
    return agreeOnJoiners(store, key_prefix_ + "grow" + std::to_string(generation) + "/joiners", options_, rank_, size_,
                          generation, &joiners, &plan, transport::Clock::now() + config_.timeout);
  }));
  COLL_INFO("INIT", "rank %d of %d: grow #%llu admits %zu process(es): the job becomes %d ranks as '%s'", rank_, size_,
            static_cast<unsigned long long>(generation), joiners.size(), plan.size, plan.name.c_str());
  return create(plan, config_, out, store_server_);
}

Status CommunicatorImpl::join(const CommOptions& options, const Config& config, std::unique_ptr<CommunicatorImpl>* out) {
  CommOptions asked = options;
  if (asked.secret.empty()) asked.secret = config.job_secret;
  if (asked.secret.empty()) return invalidArgument("join: no job secret (set COLL_JOB_SECRET or CommOptions::secret)");
  const auto timeout = options.timeout.count() > 0 ? options.timeout : config.timeout;
  const auto deadline = transport::Clock::now() + timeout;
  auto connect = [&](bootstrap::Deadline by, std::unique_ptr<bootstrap::StoreClient>* store) {
    if (asked.store) {
      *store = bootstrap::wrapExternalStore(asked.store);
      return Status::ok();
    }
    std::string found;
    Status st = bootstrap::connectInPortRange(asked.store_address, asked.store_port_tries, asked.secret, by, store, &found);
    asked.store_address = found;  // where the store turned out to be: the admission and later calls go there
    if (st) asked.store_port_tries = 1;
    return st;
  };
  std::unique_ptr<bootstrap::StoreClient> store;
  COLL_RETURN_IF_ERROR(connect(deadline, &store));
  CommOptions place;
  std::string token;
  Status waited = waitForAdmission(*store, asked, deadline, &token, &place);
  if (!waited && waited.code() == ErrorCode::Timeout) {
    // Withdraw, so that no later grow admits a process that is gone; a grow that admitted this
    // one in the meantime wins. A fresh client: the timed-out call ended the first one's.
    store.reset();
    bool admitted = false;
    COLL_RETURN_IF_ERROR(connect(transport::Clock::now() + std::chrono::seconds(5), &store));
    COLL_RETURN_IF_ERROR(withdrawFromLobby(*store, asked, token, &admitted, &place));
    if (!admitted) return waited;
  } else {
    COLL_RETURN_IF_ERROR(waited);
  }
  COLL_INFO("INIT", "joined as rank %d of %d ('%s')", place.rank, place.size, place.name.c_str());
  return create(place, config, out);
}

}  // namespace coll
