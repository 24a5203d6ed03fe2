// How a communicator reaches its rendezvous store: as a client of the store at an address
// (serving it there first on the rank the launcher names), or through a store the caller
// gave (torch's), and how its other threads open connections of their own to the same store.
#include "base/log.h"
#include "bootstrap/external_store.h"
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
  if (options.host_store) {
    std::unique_ptr<bootstrap::StoreServer> server;
    Status st = bootstrap::StoreServer::start("0.0.0.0", port, secret_, &server);
    if (!st)
      return Status(st.code(), format("rank %d cannot serve the rendezvous store: %s (another job on this port?)", rank_,
                                      st.message().c_str()));
    store_server_ = std::move(server);
  }
  Status st = bootstrap::StoreClient::connect(options.store_address, secret_, transport::Clock::now() + config_.timeout,
                                              &store_);
  if (!st && !options.host_store && st.code() == ErrorCode::Timeout)  // nobody listens there
    return Status(st.code(), st.message() + " (rank 0 serves the store: has it started, with the same MASTER_ADDR "
                             "and MASTER_PORT as this rank?)");
  return st;
}

LedgerResponder::Connect CommunicatorImpl::storeConnector(const CommOptions& options) const {
  if (options.store) {
    return [store = options.store](bootstrap::Deadline, std::unique_ptr<bootstrap::StoreClient>* out) {
      *out = bootstrap::wrapExternalStore(store);
      return Status::ok();
    };
  }
  return [address = options.store_address, secret = secret_](bootstrap::Deadline deadline,
                                                              std::unique_ptr<bootstrap::StoreClient>* out) {
    return bootstrap::StoreClient::connect(address, secret, deadline, out);
  };
}
}  // namespace coll
