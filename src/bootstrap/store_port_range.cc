#include "bootstrap/store_port_range.h"

#include <algorithm>
#include <thread>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

// A coll store greets at once; a listener silent this long is something else on that port.
// After a pass that met a silent one the next waits twice as long, up to the last, so that a
// store slow to greet (thousands of ranks connecting at once) is still found.
constexpr auto kFirstGreetingWait = std::chrono::seconds(2);
constexpr auto kLastGreetingWait = std::chrono::seconds(32);
constexpr auto kConnectWait = std::chrono::seconds(1);

std::string joinHostPort(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Deadline sooner(Deadline a, Clock::duration from_now) { return std::min(a, Clock::now() + from_now); }

// A search for the job's store over host's ports first .. last: what it was given and what it
// has learned so far.
struct RangeSearch {
  std::string host, secret;
  int first = 0, last = 0;
  Clock::duration greeting_wait = kFirstGreetingWait;
  std::string why = "connection refused";  // the last failure that says more than "refused"

  // One pass: true with *out set once the job's store answered. After a pass that met a
  // silent listener the next waits longer for a greeting.
  bool pass(Deadline deadline, std::unique_ptr<StoreClient>* out, std::string* found) {
    bool met_silent = false;
    for (int port = first; port <= last && Clock::now() < deadline; ++port) {
      UniqueFd fd;
      bool listening = false;
      Status st = connectTcpOnce(host, port, sooner(deadline, kConnectWait), &fd, &listening);
      if (!st) why = st.message();
      if (!st || !listening) continue;
      std::string address = joinHostPort(host, port);
      st = StoreClient::open(std::move(fd), address, secret, sooner(deadline, greeting_wait), out);
      if (st) {
        *found = address;
        return true;
      }
      bool silent = st.code() == ErrorCode::Timeout;  // a store of another job refuses at once
      met_silent = met_silent || silent;
      why = silent ? format("%s did not greet as a coll store", address.c_str()) : st.message();
    }
    if (met_silent) greeting_wait = std::min<Clock::duration>(greeting_wait * 2, kLastGreetingWait);
    return false;
  }
};

}  // namespace

Status serveOnFirstFreePort(const std::string& bind_host, int first_port, int tries, const std::string& secret,
                            std::unique_ptr<StoreServer>* out) {
  Status first_error;
  for (int port = first_port; port < first_port + std::max(tries, 1) && port <= 65535; ++port) {
    Status st = StoreServer::start(bind_host, port, secret, out);
    if (st) {
      if (port != first_port)
        COLL_WARN("STORE", "port %d was taken: serving the rendezvous store on %d instead (the others look there too)",
                  first_port, port);
      return st;
    }
    if (port == first_port) first_error = st;
  }
  if (tries <= 1) return first_error;
  return Status(first_error.code(), format("%s, and none of the next %d ports was free either", first_error.message().c_str(),
                                           tries - 1));
}

Status connectInPortRange(const std::string& address, int tries, const std::string& secret, Deadline deadline,
                          std::unique_ptr<StoreClient>* out, std::string* found) {
  *found = address;
  if (tries <= 1) return StoreClient::connect(address, secret, deadline, out);
  RangeSearch search;
  search.secret = secret;
  COLL_RETURN_IF_ERROR(splitHostPort(address, &search.host, &search.first));
  search.last = std::min(search.first + tries - 1, 65535);
  auto pause = std::chrono::milliseconds(10);
  while (Clock::now() < deadline) {
    if (search.pass(deadline, out, found)) return Status::ok();
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, std::max<Clock::duration>(deadline - Clock::now(), {})));
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  return timeoutError(format("rendezvous store: no store of this job answered on %s, ports %d-%d, before the "
                             "deadline (last: %s)", search.host.c_str(), search.first, search.last, search.why.c_str()));
}

}  // namespace coll::bootstrap
