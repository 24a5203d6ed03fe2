// Socket connections made when first needed, by whichever side needs one first: the
// point-to-point engine's (p2pConfig sets socket_on_demand). A peer nobody sends to costs
// nothing: no socket, no store read. Nothing here waits on a peer: the listener, the
// handshakes and the dials advance in advance(), which the transport's progress() calls, so two
// ranks dialing each other (or a ring of them) never wait on one another. The one wait is the
// store's: want() reads the peer's address (one round trip, once per peer).
//
// Either side may dial, so a receive from any source works: the sender dials. When both dial
// at once the higher rank's connection is kept, and both sides decide it the same way when a
// dialer's answer is read: an acceptor that is itself dialing a lower rank answers that rank
// with kBusyMagic (the lower rank then waits for the higher one's dial), and a rank dialing a
// higher one that dials it drops its own dial and acknowledges the higher one's.
#pragma once

#include <poll.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/fd_io.h"
#include "bootstrap/auth.h"

namespace coll::transport::socket {

class OnDemandConnector {
 public:
  struct Identity {
    int rank = 0;
    int size = 1;
    int nstreams = 1;
    std::string secret;
    std::string context;  // the communicator's key prefix: a MAC of another one does not pass
    int buffer_bytes = 0;  // SO_SNDBUF/SO_RCVBUF of dialed sockets (accepted ones inherit the listener's)
  };
  // Where a peer listens ("host:port"): read from the store when a dial starts.
  using AddressOf = std::function<Status(int peer, Deadline deadline, std::string* address)>;
  // A peer whose streams are all here (in stream order), or that could not be reached.
  struct Made {
    int peer = -1;
    std::vector<UniqueFd> fds;
    std::string remote;
    Status status;
  };

  OnDemandConnector(Identity me, int listener, AddressOf address_of);
  OnDemandConnector(const OnDemandConnector&) = delete;
  OnDemandConnector& operator=(const OnDemandConnector&) = delete;

  // Starts dialing `peer` unless a connection with it is made or under way (either way);
  // gives up at `deadline`.
  void want(int peer, Deadline deadline);
  // Accepts, answers and dials without blocking; appends what came of it.
  void advance(std::vector<Made>* made);
  // The descriptors advance() waits on: the listener, and every stream being set up.
  void addPollFds(std::vector<pollfd>* fds) const;
  // Something is being set up (advance() has more to do than look at the listener).
  bool busy() const { return !dials_.empty() || !accepts_.empty() || !failed_.empty(); }
  // Closes every stream not yet handed over (the transport is aborted).
  void clear();

 private:
  struct Accepting {
    UniqueFd fd;
    bootstrap::Nonce nonce;
    std::string in;  // the dialer's answer, as it arrives
    Deadline limit;
  };
  struct Dialing {
    int peer = -1;
    int stream = 0;
    UniqueFd fd;  // none while waiting to retry
    std::string in;
    bool greeted = false;  // the reply went: what comes next is the ack
    Clock::time_point greet_by{};  // no greeting by then: dial again (redialSilent)
    std::chrono::milliseconds greet_wait{100};
    Clock::time_point retry_at{};
    std::chrono::milliseconds pause{10};
    int last_errno = 0;
    Deadline deadline;
    bool done = false;  // swept at the end of advance()
  };
  struct Pending {
    bool dialing = false;              // our dials are out (else we wait for the peer's)
    std::map<int, UniqueFd> streams;   // by stream: handshakes done
    std::string address;               // the peer's listener, for messages
  };

  void acceptWaiting();
  void advanceAccepts(std::vector<Made>* made);
  void answer(Accepting& a, std::vector<Made>* made);
  void advanceDial(Dialing& d, std::vector<Made>* made);
  void startConnect(Dialing& d);
  void retryLater(Dialing& d, int err);
  void redialSilent(Dialing& d);
  void failIfRefused(Dialing& d, std::vector<Made>* made);
  void dropDials(int peer);
  void fail(int peer, Status status, std::vector<Made>* made);
  void finishIfWhole(int peer, std::vector<Made>* made);

  Identity me_;
  int listener_;
  AddressOf address_of_;
  std::vector<Accepting> accepts_;
  std::vector<Dialing> dials_;
  std::map<int, Pending> pending_;        // peers being connected, either way
  std::set<int> connected_;               // peers handed over
  std::vector<Made> failed_;              // failures found outside advance() (want)
};

}  // namespace coll::transport::socket
