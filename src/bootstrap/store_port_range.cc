#include "bootstrap/store_port_range.h"

#include <algorithm>
#include <thread>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

// A coll store greets at once; a listener silent this long is something else on that port.
constexpr auto kGreetingWait = std::chrono::seconds(2);
constexpr auto kConnectWait = std::chrono::seconds(1);

std::string joinHostPort(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Deadline sooner(Deadline a, Clock::duration from_now) { return std::min(a, Clock::now() + from_now); }

// One pass over the range: true with *out set once the job's store answered; *why: the last
// failure that says more than "refused" (a store that refused the secret, a silent listener).
bool tryRangeOnce(const std::string& host, int first, int tries, const std::string& secret, Deadline deadline,
                    std::unique_ptr<StoreClient>* out, std::string* found, std::string* why) {
  for (int port = first; port < first + tries && Clock::now() < deadline; ++port) {
    UniqueFd fd;
    bool listening = false;
    Status st = connectTcpOnce(host, port, sooner(deadline, kConnectWait), &fd, &listening);
    if (!st) { *why = st.message(); continue; }
    if (!listening) continue;
    std::string address = joinHostPort(host, port);
    st = StoreClient::open(std::move(fd), address, secret, sooner(deadline, kGreetingWait), out);
    if (st) {
      *found = address;
      return true;
    }
    *why = st.code() == ErrorCode::Timeout ? format("%s did not greet as a coll store", address.c_str()) : st.message();
  }
  return false;
}

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
  std::string host;
  int first = 0;
  COLL_RETURN_IF_ERROR(splitHostPort(address, &host, &first));
  int last = std::min(first + tries - 1, 65535);
  std::string why = "connection refused";
  auto pause = std::chrono::milliseconds(10);
  while (Clock::now() < deadline) {
    if (tryRangeOnce(host, first, last - first + 1, secret, deadline, out, found, &why)) return Status::ok();
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, std::max<Clock::duration>(deadline - Clock::now(), {})));
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  return timeoutError(format("rendezvous store: no store of this job answered on %s, ports %d-%d, before the "
                             "deadline (last: %s)", host.c_str(), first, last, why.c_str()));
}

}  // namespace coll::bootstrap
