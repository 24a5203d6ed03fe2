// How a communicator reaches its rendezvous store: as a client of the store at an address
// (serving it there first on the rank the launcher names), or through a store the caller
// gave (torch's), and how its other threads open connections of their own to the same store.
#include "base/log.h"
#include "bootstrap/external_store.h"
#include "bootstrap/store_port_range.h"
#include "comm/communicator_impl.h"

namespace coll {

Status CommunicatorImpl::connectStore(const CommOptions& options) {
  if (options.store) {
    store_host_ = options.store->host();
    store_ = bootstrap::wrapExternalStore(options.store);
    return Status::ok();
  }
  int port = 0;
  COLL_RETURN_IF_ERROR(bootstrap::splitHostPort(options.store_address, &store_host_, &port));
  auto deadline = transport::Clock::now() + config_.timeout;
  std::string found;
  Status st;
  if (options.host_store) {
    std::unique_ptr<bootstrap::StoreServer> server;
    st = bootstrap::serveOnFirstFreePort("0.0.0.0", port, options.store_port_tries, secret_, &server);
    if (!st)
      return Status(st.code(), format("rank %d cannot serve the rendezvous store: %s (another job on this port?)", rank_,
                                      st.message().c_str()));
    int served = server->port();
    store_server_ = std::move(server);
    // Its own store, at the port it got: exactly there, not the first that answers in the range.
    found = store_host_ + ":" + std::to_string(served);
    st = bootstrap::StoreClient::connect(found, secret_, deadline, &store_);
  } else {
    st = bootstrap::connectInPortRange(options.store_address, options.store_port_tries, secret_, deadline, &store_, &found);
    if (!st && st.code() == ErrorCode::Timeout)  // nobody listens there
      return Status(st.code(), st.message() + " (rank 0 serves the store: has it started, with the same MASTER_ADDR "
                               "and MASTER_PORT as this rank?)");
  }
  if (!st) return st;
  // Every later connection (the ledger's, a shrink's, a split's) goes where this one found it.
  options_.store_address = found;
  options_.store_port_tries = 1;
  return Status::ok();
}

LedgerResponder::Connect CommunicatorImpl::storeConnector() const {
  if (options_.store) {
    return [store = options_.store](bootstrap::Deadline, std::unique_ptr<bootstrap::StoreClient>* out) {
      *out = bootstrap::wrapExternalStore(store);
      return Status::ok();
    };
  }
  return [address = options_.store_address, secret = secret_](bootstrap::Deadline deadline,
                                                               std::unique_ptr<bootstrap::StoreClient>* out) {
    return bootstrap::StoreClient::connect(address, secret, deadline, out);
  };
}
}  // namespace coll
