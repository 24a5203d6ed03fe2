// The store server: one Asio thread, one session per client. A GET for a missing key parks
// the session until some SET provides it; the client's own deadline bounds that wait.
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "base/asio.h"
#include "base/log.h"

namespace coll::bootstrap {
namespace {

using namespace store_wire;
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

class Session;

struct StoreState {
  std::map<std::string, std::string> values;
  std::map<std::string, std::vector<std::shared_ptr<Session>>> waiters;
  std::string secret;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, StoreState* state)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), state_(state) {}

  void start() {
    nonce_ = randomNonce();
    std::memcpy(hello_, &kHelloMagic, 4);
    std::memcpy(hello_ + 4, nonce_.data(), nonce_.size());
    timer_.expires_after(kHandshakeTimeout);
    timer_.async_wait([self = shared_from_this()](auto ec) {
      if (!ec && !self->authenticated_) self->refuse("no handshake within 10 s");
    });
    asio::async_write(socket_, asio::buffer(hello_), [self = shared_from_this()](auto ec, size_t) {
      if (!ec) self->readMac();
    });
  }

  void reply(uint32_t status, const std::string& value) {
    ReplyHeader h{status, static_cast<uint32_t>(value.size())};
    out_.assign(reinterpret_cast<const char*>(&h), sizeof h);
    out_ += value;
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](auto ec, size_t) {
      if (ec) return self->ended(ec);
      self->readRequest();
    });
  }

 private:
  void refuse(const char* why) {
    ended({});
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    COLL_WARN("STORE", "refused connection from %s: %s", ec ? "?" : ep.address().to_string().c_str(), why);
    socket_.close(ec);
  }

  void readMac() {
    asio::async_read(socket_, asio::buffer(&mac_, sizeof mac_), [self = shared_from_this()](auto ec, size_t) {
      if (ec) return;
      std::string msg = std::string(kMacContext) + std::string(self->nonce_.begin(), self->nonce_.end());
      if (self->mac_ != computeMac(self->state_->secret, msg)) return self->refuse("wrong job secret");
      self->authenticated_ = true;
      self->timer_.cancel();
      asio::async_write(self->socket_, asio::buffer(&kHelloMagic, 4), [self](auto ec2, size_t) {
        if (!ec2) self->readRequest();
      });
    });
  }

  void readRequest() {
    asio::async_read(socket_, asio::buffer(&header_, sizeof header_), [self = shared_from_this()](auto ec, size_t) {
      if (ec) return self->ended(ec);
      const RequestHeader& h = self->header_;
      if (h.magic != kRequestMagic || h.key_len > kMaxKey || h.value_len > kMaxValue)
        return self->refuse("malformed request header");
      self->body_.resize(h.key_len + h.value_len);
      asio::async_read(self->socket_, asio::buffer(self->body_), [self](auto ec2, size_t) {
        if (ec2) return self->ended(ec2);
        self->handle();
      });
    });
  }

  void handle() {
    std::string key = body_.substr(0, header_.key_len);
    std::string value = body_.substr(header_.key_len);
    switch (header_.type) {
      case kSet: return set(key, value);
      case kGet: return get(key);
      case kAdd: return add(key, value);
      case kCheck: return reply(state_->values.count(key) ? kOk : kNotFound, "");
      case kAppend: return append(key, value);
      case kRead: return read(key);
      case kSetIfAbsent: return setIfAbsent(key, value);
      case kAppendOnClose:
        on_close_.emplace_back(std::move(key), std::move(value));
        return reply(kOk, "");
      default: return refuse("unknown request type");
    }
  }

  void append(const std::string& key, const std::string& value) {
    if (!appendTo(key, value)) return reply(kBadRequest, "");
    reply(kOk, "");
  }

  // False when the value would outgrow what a reply may carry.
  bool appendTo(const std::string& key, const std::string& value) {
    std::string& held = state_->values[key];
    if (held.size() + value.size() > kMaxValue) return false;
    held += value;
    wakeWaiters(key);
    return true;
  }

  void read(const std::string& key) {
    auto it = state_->values.find(key);
    if (it == state_->values.end()) return reply(kNotFound, "");
    reply(kOk, it->second);
  }

  void setIfAbsent(const std::string& key, const std::string& value) {
    auto [it, inserted] = state_->values.try_emplace(key, value);
    if (inserted) wakeWaiters(key);
    reply(kOk, state_->values[key]);
  }

  // The connection ended (not the server stopping): what the client asked to be appended then
  // is appended now. Once: a session can see its end on more than one path.
  void ended(const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    auto appends = std::move(on_close_);
    on_close_.clear();
    for (auto& [key, value] : appends) appendTo(key, value);
  }

  void set(const std::string& key, const std::string& value) {
    state_->values[key] = value;
    wakeWaiters(key);
    reply(kOk, "");
  }

  void get(const std::string& key) {
    auto it = state_->values.find(key);
    if (it != state_->values.end()) return reply(kOk, it->second);
    park(key);
  }

  // A parked client sends nothing until its reply comes, so its socket turning readable means
  // it hung up (its get timed out or was cancelled) or broke the protocol. Either way the
  // session ends then, instead of holding a descriptor until the key appears (perhaps never).
  void park(const std::string& key) {
    parked_key_ = key;
    parked_ = true;
    state_->waiters[key].push_back(shared_from_this());
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](auto ec) {
      if (ec || !self->parked_) return;  // woken by a set (which cancelled this wait)
      self->unpark();
      self->ended(ec);
      boost::system::error_code ignored;
      self->socket_.close(ignored);
    });
  }

  void unpark() {
    parked_ = false;
    auto it = state_->waiters.find(parked_key_);
    if (it == state_->waiters.end()) return;
    std::erase(it->second, shared_from_this());
    if (it->second.empty()) state_->waiters.erase(it);
  }

  void wake(const std::string& value) {
    parked_ = false;
    boost::system::error_code ignored;
    socket_.cancel(ignored);  // only the readability wait is pending now
    reply(kOk, value);
  }

  void add(const std::string& key, const std::string& value) {
    int64_t delta = 0, current = 0;
    if (value.size() != 8) return reply(kBadRequest, "");
    std::memcpy(&delta, value.data(), 8);
    auto it = state_->values.find(key);
    if (it != state_->values.end() && it->second.size() == 8) std::memcpy(&current, it->second.data(), 8);
    // Wraps like two's complement instead of overflowing (undefined for int64_t): a client may
    // send any delta. Found by fuzz_store_protocol under UBSan.
    current = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
    std::string stored(reinterpret_cast<const char*>(&current), 8);
    state_->values[key] = stored;
    wakeWaiters(key);
    reply(kOk, stored);
  }

  void wakeWaiters(const std::string& key) {
    auto it = state_->waiters.find(key);
    if (it == state_->waiters.end()) return;
    auto waiting = std::move(it->second);
    state_->waiters.erase(it);
    for (auto& s : waiting) s->wake(state_->values[key]);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  StoreState* state_;
  Nonce nonce_{};
  char hello_[4 + sizeof(Nonce)];
  uint64_t mac_ = 0;
  bool authenticated_ = false;
  bool parked_ = false;  // in state_->waiters[parked_key_], waiting for a set
  std::string parked_key_;
  std::vector<std::pair<std::string, std::string>> on_close_;  // kAppendOnClose's, in order
  RequestHeader header_{};
  std::string body_, out_;
};

class AsioStoreServer : public StoreServer {
 public:
  AsioStoreServer() : acceptor_(io_) {}
  ~AsioStoreServer() override {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status open(const std::string& host, int port, const std::string& secret) {
    state_.secret = secret;
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    if (ec) return invalidArgument(format("store: bad bind address '%s'", host.c_str()));
    tcp::endpoint ep(address, static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
    if (ec) return transportError(format("store: cannot listen on %s:%d: %s", host.c_str(), port, ec.message().c_str()));
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
    COLL_INFO("STORE", "serving the rendezvous store on %s:%d", host.c_str(), port_);
    return Status::ok();
  }

  int port() const override { return port_; }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (!ec) {
        ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);  // not inherited by forked ranks
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), &state_)->start();
      }
      if (ec != asio::error::operation_aborted) accept();
    });
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  StoreState state_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace

Status StoreServer::start(const std::string& bind_host, int port, const std::string& secret,
                          std::unique_ptr<StoreServer>* out) {
  auto server = std::make_unique<AsioStoreServer>();
  COLL_RETURN_IF_ERROR(server->open(bind_host, port, secret));
  *out = std::move(server);
  return Status::ok();
}

}  // namespace coll::bootstrap
