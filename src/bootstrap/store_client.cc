#include <sys/socket.h>

#include <cstring>
#include <atomic>
#include <mutex>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "base/fd_io.h"
#include "base/log.h"

namespace coll::bootstrap {
namespace {

using namespace store_wire;

// A list item on the wire: u32 length, then its bytes; a list is its items back to back.
std::string frameItem(const std::string& item) {
  uint32_t n = static_cast<uint32_t>(item.size());
  return std::string(reinterpret_cast<const char*>(&n), 4) + item;
}

Status unframeItems(const std::string& held, std::vector<std::string>* items) {
  for (size_t at = 0; at < held.size();) {
    uint32_t n = 0;
    if (held.size() - at < 4) return transportError("store: malformed list (a truncated item length)");
    std::memcpy(&n, held.data() + at, 4);
    at += 4;
    if (held.size() - at < n) return transportError("store: malformed list (an item longer than the list)");
    items->push_back(held.substr(at, n));
    at += n;
  }
  return Status::ok();
}

class TcpStoreClient : public StoreClient {
 public:
  TcpStoreClient(UniqueFd fd, std::string address) : fd_(std::move(fd)), address_(std::move(address)) {}

  Status handshake(const std::string& secret, Deadline deadline) {
    char hello[4 + sizeof(Nonce)];
    COLL_RETURN_IF_ERROR(readAll(fd_.get(), hello, sizeof hello, deadline, "store handshake"));
    uint32_t magic;
    std::memcpy(&magic, hello, 4);
    if (magic != kHelloMagic)
      return transportError(format("store at %s did not greet as a coll store", address_.c_str()));
    std::string msg = std::string(kMacContext) + std::string(hello + 4, sizeof(Nonce));
    uint64_t mac = computeMac(secret, msg);
    COLL_RETURN_IF_ERROR(writeAll(fd_.get(), &mac, sizeof mac, deadline, "store handshake"));
    uint32_t ack = 0;
    Status st = readAll(fd_.get(), &ack, sizeof ack, deadline, "store handshake");
    if (st.code() == ErrorCode::PeerLost && !st.isOk())
      return peerLostError(format("store at %s refused us: wrong job secret (is COLL_JOB_SECRET the same on every rank, or is another job's store on this port?)", address_.c_str()));
    return st;
  }

  Status set(const std::string& key, const std::string& value, Deadline deadline) override {
    std::string ignored;
    uint32_t status;
    return call(kSet, key, value, deadline, &status, &ignored);
  }

  Status get(const std::string& key, std::string* value, Deadline deadline) override {
    uint32_t status;
    Status st = call(kGet, key, "", deadline, &status, value);
    if (st.code() == ErrorCode::Timeout && !st.isOk())
      return timeoutError(format("store %s: key '%s' did not appear before the deadline (a rank has not "
                                 "published it: is every rank started?)", address_.c_str(), key.c_str()));
    return st;
  }

  Status check(const std::string& key, bool* exists, Deadline deadline) override {
    std::string ignored;
    uint32_t status = kNotFound;
    COLL_RETURN_IF_ERROR(call(kCheck, key, "", deadline, &status, &ignored));
    *exists = status == kOk;
    return Status::ok();
  }

  Status append(const std::string& key, const std::string& item, Deadline deadline) override {
    std::string ignored;
    uint32_t status;
    return call(kAppend, key, frameItem(item), deadline, &status, &ignored);
  }

  Status readList(const std::string& key, std::vector<std::string>* items, Deadline deadline) override {
    std::string held;
    uint32_t status = kNotFound;
    COLL_RETURN_IF_ERROR(call(kRead, key, "", deadline, &status, &held));
    items->clear();
    if (status == kNotFound) return Status::ok();
    return unframeItems(held, items);
  }

  Status setIfAbsent(const std::string& key, const std::string& value, std::string* held,
                     Deadline deadline) override {
    uint32_t status;
    return call(kSetIfAbsent, key, value, deadline, &status, held);
  }

  Status appendWhenClosed(const std::string& key, const std::string& item, Deadline deadline) override {
    std::string ignored;
    uint32_t status;
    return call(kAppendOnClose, key, frameItem(item), deadline, &status, &ignored);
  }

  void cancel() override {
    std::lock_guard<std::mutex> lock(fd_mu_);
    cancelled_ = true;
    if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);  // wakes a poll() blocked on it; the fd stays ours
  }

  Status add(const std::string& key, int64_t delta, int64_t* value, Deadline deadline) override {
    std::string reply;
    uint32_t status;
    COLL_RETURN_IF_ERROR(call(kAdd, key, std::string(reinterpret_cast<const char*>(&delta), 8), deadline,
                              &status, &reply));
    if (reply.size() != 8) return transportError("store: malformed add reply");
    std::memcpy(value, reply.data(), 8);
    return Status::ok();
  }

 private:
  Status call(uint32_t type, const std::string& key, const std::string& value, Deadline deadline,
              uint32_t* status, std::string* reply) {
    if (key.size() > kMaxKey || value.size() > kMaxValue) return invalidArgument("store: key or value too large");
    if (!fd_ || cancelled_) return peerLostError(format("store %s: connection already failed or cancelled", address_.c_str()));
    RequestHeader h{kRequestMagic, type, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())};
    std::string msg(reinterpret_cast<const char*>(&h), sizeof h);
    msg += key;
    msg += value;
    Status st = exchange(msg, deadline, status, reply);
    if (!st) {  // a half-finished exchange leaves the stream unusable
      std::lock_guard<std::mutex> lock(fd_mu_);  // cancel() must never shut down a reused fd number
      fd_.reset();
      // Name the store: the socket no longer can once its far end is gone.
      if (st.code() != ErrorCode::Internal)
        return Status(st.code(), format("store %s: %s", address_.c_str(), st.message().c_str()), st.peer());
    }
    return st;
  }

  Status exchange(const std::string& msg, Deadline deadline, uint32_t* status, std::string* reply) {
    COLL_RETURN_IF_ERROR(writeAll(fd_.get(), msg.data(), msg.size(), deadline, "store request"));
    ReplyHeader r;
    COLL_RETURN_IF_ERROR(readAll(fd_.get(), &r, sizeof r, deadline, "store reply"));
    if (r.value_len > kMaxValue) return transportError("store: oversized reply");
    reply->resize(r.value_len);
    COLL_RETURN_IF_ERROR(readAll(fd_.get(), reply->data(), r.value_len, deadline, "store reply"));
    countRequest(msg.size(), sizeof r + r.value_len);
    *status = r.status;
    if (r.status == kBadRequest) return internalError("store refused the request as malformed");
    return Status::ok();
  }

  UniqueFd fd_;
  std::string address_;
  std::mutex fd_mu_;  // guards closing fd_ against cancel() from another thread
  std::atomic<bool> cancelled_{false};
};

}  // namespace

Status splitHostPort(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    return invalidArgument(format("address '%s' is not host:port", address.c_str()));
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char* end = nullptr;
  long p = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || p <= 0 || p > 65535)
    return invalidArgument(format("address '%s' has no valid port", address.c_str()));
  *host = h;
  *port = static_cast<int>(p);
  return Status::ok();
}

Status StoreClient::connect(const std::string& address, const std::string& secret, Deadline deadline,
                            std::unique_ptr<StoreClient>* out) {
  std::string host;
  int port;
  COLL_RETURN_IF_ERROR(splitHostPort(address, &host, &port));
  UniqueFd fd;
  Status st = connectTcp(host, port, deadline, &fd);
  if (!st) return Status(st.code(), format("rendezvous store %s: %s", address.c_str(), st.message().c_str()));
  return open(std::move(fd), address, secret, deadline, out);
}

Status StoreClient::open(UniqueFd fd, const std::string& address, const std::string& secret, Deadline deadline,
                         std::unique_ptr<StoreClient>* out) {
  auto client = std::make_unique<TcpStoreClient>(std::move(fd), address);
  COLL_RETURN_IF_ERROR(client->handshake(secret, deadline));
  *out = std::move(client);
  return Status::ok();
}

Status StoreClient::barrier(const std::string& name, int count, Deadline deadline) {
  int64_t arrived = 0;
  COLL_RETURN_IF_ERROR(add(name + "/arrived", 1, &arrived, deadline));
  if (arrived == count) return set(name + "/done", "1", deadline);
  std::string ignored;
  Status st = get(name + "/done", &ignored, deadline);
  if (st.code() == ErrorCode::Timeout && !st.isOk())
    return timeoutError(format("barrier '%s': only some of %d ranks arrived before the deadline", name.c_str(), count));
  return st;
}

}  // namespace coll::bootstrap
