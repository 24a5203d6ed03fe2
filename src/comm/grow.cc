#include "comm/grow.h"

#include <sstream>

#include "base/log.h"
#include "bootstrap/auth.h"

namespace coll {
namespace {

// One store call's limit while waiting for other things (a store slower than this is stuck).
constexpr auto kStoreCallLimit = std::chrono::seconds(2);

bootstrap::Deadline call() { return bootstrap::Clock::now() + kStoreCallLimit; }

// What a joiner that gave up writes where its admission would go.
constexpr const char* kWithdrawn = "withdrawn";

// "<name> <rank> <size>", as the members wrote it: the joiner's options in the new communicator.
Status parsePlace(const CommOptions& options, const std::string& place, CommOptions* out) {
  std::istringstream in(place);
  *out = options;
  if (!(in >> out->name >> out->rank >> out->size) || out->rank < 0 || out->rank >= out->size)
    return internalError("join: a malformed admission in the store: " + place);
  out->local_rank = -1;
  out->host_store = false;
  return Status::ok();
}

std::string encodeTokens(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

std::vector<std::string> decodeTokens(const std::string& s) {
  std::vector<std::string> tokens;
  std::istringstream in(s);
  for (std::string t; in >> t;) tokens.push_back(t);
  return tokens;
}

// Every token in the lobby that no grow has admitted yet and whose joiner has not withdrawn it,
// in the order they came.
Status waitingJoiners(bootstrap::StoreClient& store, const std::string& lobby, std::vector<std::string>* out) {
  std::vector<std::string> all;
  COLL_RETURN_IF_ERROR(store.readList(lobbyJoinersKey(lobby), &all, call()));
  out->clear();
  for (const std::string& token : all) {
    bool admitted = false;
    COLL_RETURN_IF_ERROR(store.check(lobbyAdmittedKey(lobby, token), &admitted, call()));
    if (!admitted) out->push_back(token);
  }
  return Status::ok();
}

}  // namespace

std::string lobbyOf(const std::string& name) { return name.substr(0, name.find('/')); }
std::string lobbyJoinersKey(const std::string& lobby) { return "coll/lobby/" + lobby + "/joiners"; }
std::string lobbyAdmittedKey(const std::string& lobby, const std::string& token) {
  return "coll/lobby/" + lobby + "/admitted/" + token;
}

Status agreeOnJoiners(bootstrap::StoreClient& store, const std::string& decision_key, const CommOptions& current,
                      int rank, int size, uint64_t generation, std::vector<std::string>* joiners, CommOptions* out,
                      bootstrap::Deadline deadline) {
  const std::string lobby = lobbyOf(current.name);
  std::vector<std::string> waiting;
  COLL_RETURN_IF_ERROR(waitingJoiners(store, lobby, &waiting));
  std::string decision;
  COLL_RETURN_IF_ERROR(store.setIfAbsent(decision_key, encodeTokens(waiting), &decision, deadline));
  *joiners = decodeTokens(decision);
  *out = current;
  out->rank = rank;
  out->size = size + static_cast<int>(joiners->size());
  out->local_rank = -1;
  out->host_store = false;
  out->name = current.name + "/grow" + std::to_string(generation);
  // Set only if absent: a joiner whose own deadline passed marks its token withdrawn the same
  // way, and whichever came first holds for every member and for the joiner.
  for (size_t i = 0; i < joiners->size(); ++i) {
    const std::string place =
        out->name + " " + std::to_string(size + static_cast<int>(i)) + " " + std::to_string(out->size);
    std::string held;
    COLL_RETURN_IF_ERROR(store.setIfAbsent(lobbyAdmittedKey(lobby, (*joiners)[i]), place, &held, deadline));
    if (held != place)
      return peerLostError(format("grow #%llu: joiner %s gave up waiting (its join timed out) as this grow admitted it; "
                                  "nothing was made: call grow() again",
                                  static_cast<unsigned long long>(generation), (*joiners)[i].c_str()));
  }
  return Status::ok();
}

Status waitForAdmission(bootstrap::StoreClient& store, const CommOptions& options, bootstrap::Deadline deadline,
                        std::string* token, CommOptions* out) {
  const std::string lobby = lobbyOf(options.name);
  *token = bootstrap::generateSecret().substr(0, 16) + "-" + std::to_string(::getpid());
  COLL_RETURN_IF_ERROR(store.append(lobbyJoinersKey(lobby), *token, call()));
  std::string place;
  Status st = store.get(lobbyAdmittedKey(lobby, *token), &place, deadline);
  if (!st && st.code() == ErrorCode::Timeout)
    return timeoutError(format("join '%s': no member admitted this process before the deadline (the members must call "
                               "grow(); is the job still running, and is this its store?)", lobby.c_str()));
  COLL_RETURN_IF_ERROR(st);
  return parsePlace(options, place, out);
}

Status withdrawFromLobby(bootstrap::StoreClient& store, const CommOptions& options, const std::string& token,
                         bool* admitted, CommOptions* out) {
  const std::string lobby = lobbyOf(options.name);
  std::string place;
  COLL_RETURN_IF_ERROR(store.setIfAbsent(lobbyAdmittedKey(lobby, token), kWithdrawn, &place, call()));
  *admitted = place != kWithdrawn;
  return *admitted ? parsePlace(options, place, out) : Status::ok();
}

}  // namespace coll
