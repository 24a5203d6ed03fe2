// The transport conformance suite: what every Transport/Connection must do (transport.h),
// written once and instantiated per transport by a ten-line file (socket_conformance_test.cc,
// shm_conformance_test.cc), as TensorPipe's test/transport/connection_test.cc is.
//
// Each case forks 2 ranks (rank_runner.h) around a rendezvous store in the parent (or, for a
// transport over an in-process fake device, forks one process running the ranks as threads:
// TransportUnderTest::threads); each rank
// creates the transport under test with every other rank as a peer on its host, connects to
// all of them and runs the case's body, driving progress() with a deadline. Payloads follow a
// position- and seed-dependent pattern checked byte for byte, with guard bytes after every
// receive buffer. After every run no /dev/shm segment of the run may be left, whatever
// happened to the ranks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "base/config.h"
#include "multirank/rank_runner.h"
#include "transport/transport.h"

namespace coll::test {

using transport::Connection;
using transport::PeerDirectory;
using transport::Transport;

// How to make the transport under test inside a forked rank.
struct TransportUnderTest {
  std::string name;  // the parameter's name in test names
  // `peers`: every other rank of the run (all on this host).
  std::function<Status(const Config&, const PeerDirectory&, const std::vector<int>& peers,
                       std::unique_ptr<Transport>*)> create;
  std::function<void(Config*)> configure;  // optional: e.g. turn CMA off
  // Optional: the /dev/shm name a rank's set-up uses (shm), so runs can prove it gone.
  std::function<std::string(const PeerDirectory&, int rank)> shm_name;
  // Connection::unreadMessage() can see a message no receive claimed (socket, shm; UCX cannot).
  bool peeks = false;
  // The ranks are threads of one forked process (runThreads), for a transport whose ranks
  // share an in-process device (verbs over fake NICs). No rank can then be killed alone: the
  // cases that SIGKILL one skip (kNoRankKills).
  bool threads = false;
};

inline constexpr const char* kNoRankKills =
    "the ranks are threads of one process here (an in-process fake device): none can be killed alone";

inline void PrintTo(const TransportUnderTest& t, std::ostream* os) { *os << t.name; }

class ConnectionConformance : public ::testing::TestWithParam<TransportUnderTest> {};
std::string transportParamName(const ::testing::TestParamInfo<TransportUnderTest>& info);

// One rank's view inside a case.
struct Endpoint {
  Rank& self;
  std::unique_ptr<Transport> owned;  // reset it to close the transport early
  Transport* transport = nullptr;
  std::vector<Connection*> conns;  // by rank; nullptr for this rank
  bootstrap::StoreClient* store = nullptr;
  std::string store_address;  // the run's store, for a client of another thread's own
  PeerDirectory directory;
  transport::Deadline deadline;  // the case's, 20 s after the transport was made

  // Drives progress() until `count` requests completed; fails the rank at the deadline.
  // Returns cookie -> status. `after_each`: called after every progress() call.
  std::map<uint64_t, Status> wait(size_t count, const std::function<void()>& after_each = {});
  // All ranks of the run meet (through the store).
  void barrier(const std::string& name);
};

// The executor's way of using a connection's optional calls (transport.h, ConnectionCaps):
// post the fused request where caps() offers it, and say whether it did.
inline bool tryRecvReduce(Connection* c, void* data, const void* operand, size_t bytes, uint64_t tag, uint64_t cookie,
                          DataType type, ReduceOp op) {
  if (!c->caps().recv_reduce) return false;
  c->postRecvReduce(data, operand, bytes, tag, cookie, type, op);
  return true;
}
inline bool trySendCopying(Connection* c, const void* data, void* copy, size_t bytes, uint64_t tag, uint64_t cookie) {
  if (!c->caps().sendsCopying(bytes)) return false;
  c->postSendCopying(data, copy, bytes, tag, cookie);
  return true;
}
inline bool tryRecvReduceForward(Connection* c, void* data, const void* operand, size_t bytes, uint64_t tag,
                                 uint64_t recv_cookie, uint64_t send_cookie, DataType type, ReduceOp op) {
  if (!c->caps().forwards(bytes)) return false;
  c->postRecvReduceForward(data, operand, bytes, tag, recv_cookie, send_cookie, type, op);
  return true;
}
inline bool tryRecvRelay(Connection* c, void* data, size_t bytes, uint64_t tag, uint64_t recv_cookie, Connection& next,
                         uint64_t send_cookie) {
  if (!c->caps().relays(bytes)) return false;
  c->postRecvRelay(data, bytes, tag, recv_cookie, next, send_cookie);
  return true;
}

using CaseBody = std::function<void(Endpoint&)>;

struct CaseOptions {
  int ranks = 2;
  RunOptions run;                 // e.g. parent_action to kill a rank
  bool create_transport = true;   // false: the body creates it (Endpoint::transport stays null)
  std::function<void(Config*)> configure;  // after the transport's own configure
};

// Runs body on forked ranks (threads of one forked process where t.threads); ADD_FAILUREs for
// /dev/shm leftovers. Returns the outcomes.
std::vector<RankOutcome> runCase(const TransportUnderTest& t, const CaseBody& body, const CaseOptions& options = {});

// Makes the transport in a body that set create_transport = false.
Status createFor(const TransportUnderTest& t, Endpoint& ep, const Config& config, const std::vector<int>& peers,
                 std::unique_ptr<Transport>* out);
Config caseConfig(const TransportUnderTest& t, const CaseOptions& options);

// Waits (bounded) until `slot`'s phase reaches `phase`; false at the limit.
bool awaitPhase(const RankSlot& slot, int phase, std::chrono::milliseconds limit = std::chrono::seconds(20));

// Payloads: byte i of message `seed`.
void fillPattern(uint8_t* p, size_t bytes, uint64_t seed);
// RANK_CHECKs the bytes (naming the first bad offset) and the guard bytes after them.
void checkPattern(const uint8_t* p, size_t bytes, uint64_t seed, const char* what);
// A receive buffer of `bytes` followed by guard bytes.
std::vector<uint8_t> recvBuffer(size_t bytes);

}  // namespace coll::test
