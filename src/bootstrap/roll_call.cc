#include "bootstrap/roll_call.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

constexpr const char* kOk = "ok";
constexpr auto kGrace = std::chrono::seconds(2);  // for naming and acknowledging after a deadline

// The verdict as read, or why none was read: `waited_out` when this rank's own store wait
// timed out (nobody published anything), which leaves the naming of missing ranks to us.
struct Verdict {
  Status status;
  bool waited_out = false;
};

// Ranks whose key "rank/R" is (present) or is not (!present) in the store: "0, 1" (16 at most).
std::string ranksWhere(StoreClient& store, const std::string& prefix, int size, bool present, int* count,
                       Deadline deadline) {
  std::string list;
  *count = 0;
  for (int r = 0; r < size; ++r) {
    bool here = false;
    if (!store.check(prefix + "rank/" + std::to_string(r), &here, deadline)) break;
    if (here != present) continue;
    if (++*count <= 16) list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  if (*count > 16) list += ", ...";
  return list;
}

// Publishes a problem as the verdict (unless one is already there) and returns it.
Status publish(StoreClient& store, const std::string& prefix, ErrorCode code, const std::string& what,
               Deadline deadline) {
  int64_t first = 0;
  if (store.add(prefix + "verdict_claim", 1, &first, deadline) && first == 1)
    (void)store.set(prefix + "verdict", std::to_string(static_cast<int>(code)) + ":" + what, deadline);
  return Status(code, what);
}

Verdict readVerdict(StoreClient& store, const std::string& prefix, Deadline deadline) {
  std::string verdict;
  Status st = store.get(prefix + "verdict", &verdict, deadline);
  if (!st) return {st, st.code() == ErrorCode::Timeout};
  if (verdict == kOk) return {Status::ok()};
  size_t colon = verdict.find(':');  // "<ErrorCode>:<message>", from publish()
  int code = colon == std::string::npos ? 0 : std::atoi(verdict.substr(0, colon).c_str());
  ErrorCode ec = code == static_cast<int>(ErrorCode::Timeout) ? ErrorCode::Timeout : ErrorCode::InvalidArgument;
  return {Status(ec, colon == std::string::npos ? verdict : verdict.substr(colon + 1))};
}

// This rank's part: join, compare sizes with rank 0, count, then wait for the verdict.
Verdict join(StoreClient& store, const std::string& prefix, const RollCall& call, Deadline deadline) {
  const std::string me = std::to_string(call.rank);
  int64_t mine = 0;
  if (Status st = store.add(prefix + "rank/" + me, 1, &mine, deadline); !st) return {st};
  if (mine > 1) {
    return {publish(store, prefix, ErrorCode::InvalidArgument,
                    format("rank %d joined twice at %s: two processes were started as rank %d (a duplicate "
                           "RANK, or another job using the same store port)", call.rank, call.where.c_str(),
                           call.rank),
                    deadline)};
  }
  if (Status st = store.set(prefix + "size/" + me, std::to_string(call.size), deadline); !st) return {st};
  if (call.rank != 0) {
    std::string first;
    Status st = store.get(prefix + "size/0", &first, deadline);
    if (!st) return {st, st.code() == ErrorCode::Timeout};
    if (first != std::to_string(call.size)) {
      return {publish(store, prefix, ErrorCode::InvalidArgument,
                      format("world size disagrees at %s: rank %d says %d, rank 0 says %s", call.where.c_str(),
                             call.rank, call.size, first.c_str()),
                      deadline)};
    }
  }
  int64_t count = 0;
  if (Status st = store.add(prefix + "count", 1, &count, deadline); !st) return {st};
  if (count == call.size) (void)store.set(prefix + "verdict", kOk, deadline);
  return readVerdict(store, prefix, deadline);
}

// Nobody gave a verdict in time: name who is missing, and tell the others in the same words.
Status nameMissing(StoreClient& store, const std::string& prefix, const RollCall& call, Deadline grace) {
  int joined = 0, missing_count = 0;
  std::string present = ranksWhere(store, prefix, call.size, true, &joined, grace);
  std::string missing = ranksWhere(store, prefix, call.size, false, &missing_count, grace);
  if (missing_count == 0) {  // all there, yet no verdict: one is stuck before counting itself
    return publish(store, prefix, ErrorCode::Timeout,
                   format("all %d ranks joined %s, but not all of them finished the roll call within COLL_TIMEOUT",
                          call.size, call.where.c_str()),
                   grace);
  }
  return publish(store, prefix, ErrorCode::Timeout,
                 format("rank%s %s never joined: %d of %d ranks joined %s within COLL_TIMEOUT (%s%s)",
                        missing_count == 1 ? "" : "s", missing.c_str(), joined, call.size, call.where.c_str(),
                        joined == 1 ? "rank " : "ranks ", joined == 0 ? "none" : present.c_str()),
                 grace);
}

// The store's host stays until every expected process has read the verdict: until `size`
// acknowledgements, or after the deadline until everyone who arrived has acknowledged.
void lingerForOthers(StoreClient& store, const std::string& prefix, int size, Deadline deadline) {
  Deadline hard = std::max(deadline, Clock::now()) + kGrace;
  while (Clock::now() < hard) {
    int64_t acks = 0, arrived = 0;
    if (!store.add(prefix + "ack", 0, &acks, hard) || !store.add(prefix + "arrived", 0, &arrived, hard)) return;
    if (acks >= size || (Clock::now() >= deadline && acks >= arrived)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Status rollCall(StoreClient& store_in, const std::string& prefix_in, const RollCall& call, Deadline deadline) {
  const std::string prefix = prefix_in + "roll/";
  int64_t ignored = 0;
  COLL_RETURN_IF_ERROR(store_in.add(prefix + "arrived", 1, &ignored, deadline));
  Verdict verdict = join(store_in, prefix, call, deadline);
  if (verdict.status) return Status::ok();
  // A client whose wait timed out is closed: go on with a fresh connection where we need one.
  StoreClient* store = &store_in;
  std::unique_ptr<StoreClient> fresh;
  Deadline grace = Clock::now() + kGrace;
  if (verdict.waited_out) {
    if (!call.reconnect || !call.reconnect(grace, &fresh)) return verdict.status;
    store = fresh.get();
    bool given = false;  // someone may have given the verdict meanwhile (check: never waits)
    if (!store->check(prefix + "verdict", &given, grace)) return verdict.status;
    verdict.status = given ? readVerdict(*store, prefix, grace).status : nameMissing(*store, prefix, call, grace);
    if (verdict.status) return Status::ok();
  }
  if (store->add(prefix + "ack", 1, &ignored, grace) && call.hosts_store)
    lingerForOthers(*store, prefix, call.size, deadline);
  return verdict.status;
}

}  // namespace coll::bootstrap
