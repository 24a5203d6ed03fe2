// Transport micro-benchmark: two forked processes on this host, one Connection between them.
//   ping-pong latency: half the round trip of a message bounced back and forth
//   streaming bandwidth: rank 0 streams messages to rank 1, two in flight
//   both ways: each rank streams to the other at once, as in a collective
// for the shm transport (CMA on and off) and the socket transport, side by side. Buffers are
// reused, so on a machine with a large L3 the smaller sizes copy cache to cache.
//
//   transport_pingpong [--transports shm,shm-slots,socket] [--iters 20000] [--stream-bytes 1G]
//   transport_pingpong --ranks 4    a token passed around 4 ranks (per-hop latency, which
//                                   shows how waiting ranks share cores) and a ring shift
//   transport_pingpong --bystanders 254   ping-pong of ranks 0 and 1 while 254 more ranks of the
//                                   host take part in the set-up, then wait (blocked, off the cores)
//                                   and exchange nothing: what a peer nobody talks to costs
//   --transports shm-engine    the second plane of the segments, as the point-to-point engine
//                                   gets it; with --bystanders, ranks 0 and 1 keep a receive posted
//                                   on every bystander's connection, as the engine does
// COLL_SHM_* and COLL_SOCKET_* apply as usual (read once through Config).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "base/config.h"
#include "base/log.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"

namespace {

using namespace coll;
using transport::Clock;
using transport::Deadline;

struct Options {
  std::vector<std::string> transports{"shm", "shm-slots", "socket"};
  int ranks = 2;
  int bystanders = 0;
  int iters = 20000;
  size_t stream_bytes = size_t(1) << 30;  // per size
};

struct Link {
  std::unique_ptr<transport::Transport> t;
  transport::Connection* conn = nullptr;  // to rank 1 - rank (pairs)
  transport::Connection* left = nullptr;  // rings of n ranks
  transport::Connection* right = nullptr;
  int rank = 0;
  int n = 2;
};

void die(const std::string& what) {
  std::fprintf(stderr, "transport_pingpong: %s\n", what.c_str());
  std::_Exit(1);
}

// Drives progress until at least one request completes; returns how many did.
size_t waitSome(Link& l) {
  std::vector<transport::Completion> c;
  Deadline until = Clock::now() + std::chrono::seconds(60);
  while (c.empty()) {
    Status st = l.t->progress(&c, until);
    if (!st || Clock::now() > until) die("progress: " + st.message());
  }
  for (auto& x : c)
    if (!x.status) die("request failed: " + x.status.message());
  return c.size();
}

void waitOne(Link& l) {
  if (waitSome(l) != 1) die("expected one completion");
}

double pingPong(Link& l, size_t bytes, int iters) {
  std::vector<uint8_t> buf(bytes, 1);
  Clock::time_point start;
  for (int i = -iters / 10; i < iters; ++i) {  // the first tenth warms up
    if (i == 0) start = Clock::now();
    if (l.rank == 0) {
      l.conn->postSend(buf.data(), bytes, 1, 1);
      waitOne(l);
      l.conn->postRecv(buf.data(), bytes, 2, 2);
      waitOne(l);
    } else {
      l.conn->postRecv(buf.data(), bytes, 1, 1);
      waitOne(l);
      l.conn->postSend(buf.data(), bytes, 2, 2);
      waitOne(l);
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters / 2;
}

// GB/s seen by the receiver; 2 messages in flight, then a 1-byte ack so both ranks end together.
double stream(Link& l, size_t bytes, size_t total) {
  constexpr int kWindow = 2;
  size_t count = std::max<size_t>(4, total / bytes);
  std::vector<std::vector<uint8_t>> bufs(kWindow, std::vector<uint8_t>(bytes, 7));
  size_t posted = 0, done = 0;
  Clock::time_point start = Clock::now();
  auto post = [&] {
    auto& b = bufs[posted % kWindow];
    if (l.rank == 0) l.conn->postSend(b.data(), bytes, 3, posted);
    else l.conn->postRecv(b.data(), bytes, 3, posted);
    ++posted;
  };
  while (posted < std::min<size_t>(kWindow, count)) post();
  while (done < count) {
    done += waitSome(l);
    while (posted < count && posted < done + kWindow) post();
  }
  double s = std::chrono::duration<double>(Clock::now() - start).count();
  uint8_t ack = 0;
  if (l.rank == 1) l.conn->postSend(&ack, 1, 4, 0);
  else l.conn->postRecv(&ack, 1, 4, 0);
  waitOne(l);
  return static_cast<double>(bytes) * count / s / 1e9;
}

// Both ranks stream to each other at once (as in an all-reduce, where every rank sends and
// receives): GB/s per direction.
double bidirectional(Link& l, size_t bytes, size_t total) {
  constexpr int kWindow = 2;
  size_t count = std::max<size_t>(4, total / bytes);
  std::vector<std::vector<uint8_t>> out(kWindow, std::vector<uint8_t>(bytes, 7)), in = out;
  size_t sent = 0, received = 0, done = 0;
  Clock::time_point start = Clock::now();
  auto post = [&] {
    while (sent < count && sent < done / 2 + kWindow) {
      l.conn->postSend(out[sent % kWindow].data(), bytes, 5, sent);
      l.conn->postRecv(in[received % kWindow].data(), bytes, 5, 1'000'000 + received);
      ++sent;
      ++received;
    }
  };
  post();
  while (done < 2 * count) {
    done += waitSome(l);
    post();
  }
  return static_cast<double>(bytes) * count / std::chrono::duration<double>(Clock::now() - start).count() / 1e9;
}

// A token passed around a ring of n ranks: µs per hop. Only one rank has work at a time, so
// with more ranks than cores the waiting ones must give up their cores quickly.
double tokenRing(Link& l, size_t bytes, int laps) {
  std::vector<uint8_t> buf(bytes, 1);
  Clock::time_point start;
  for (int i = -laps / 10; i < laps; ++i) {
    if (i == 0) start = Clock::now();
    if (l.rank != 0) {
      l.left->postRecv(buf.data(), bytes, 6, 1);
      waitOne(l);
    }
    l.right->postSend(buf.data(), bytes, 6, 2);
    waitOne(l);
    if (l.rank == 0) {
      l.left->postRecv(buf.data(), bytes, 6, 1);
      waitOne(l);
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / laps / l.n;
}

// Every rank sends to its right and receives from its left at once, as a ring all-reduce
// step does: GB/s received per rank.
double ringShift(Link& l, size_t bytes, size_t total) {
  size_t count = std::max<size_t>(4, total / bytes);
  std::vector<uint8_t> out(bytes, 3), in(bytes);
  Clock::time_point start = Clock::now();
  for (size_t i = 0; i < count; ++i) {
    l.right->postSend(out.data(), bytes, 7, 1);
    l.left->postRecv(in.data(), bytes, 7, 2);
    for (size_t done = 0; done < 2;) done += waitSome(l);
  }
  return static_cast<double>(bytes) * count / std::chrono::duration<double>(Clock::now() - start).count() / 1e9;
}

Link makeLink(const std::string& kind, int rank, int n, int workers, const std::string& address, const std::string& secret,
              std::unique_ptr<bootstrap::StoreClient>* kept) {
  Link l;
  l.rank = rank;
  l.n = n;
  Deadline deadline = Clock::now() + std::chrono::seconds(30);
  std::unique_ptr<bootstrap::StoreClient> store;
  if (!bootstrap::StoreClient::connect(address, secret, deadline, &store)) die("store");
  Config c = Config::global();
  c.timeout = std::chrono::seconds(30);
  if (kind == "shm-slots") c.shm_cma_threshold = 0;
  transport::PeerDirectory dir{rank, n, secret, "pingpong/" + kind + "/", store.get(), "127.0.0.1"};
  std::vector<int> others;
  for (int r = 0; r < n; ++r)
    if (r != rank) others.push_back(r);
  Status st;
  if (kind == "socket") {
    st = transport::socket::createTransport(c, dir, &l.t);
  } else if (kind == "shm-engine") {
    static std::unique_ptr<transport::Transport> first;  // the collectives' plane, kept to the exit
    std::shared_ptr<transport::shm::SegmentFiles> files;
    st = transport::shm::createTransportWithSecondPlane(c, dir, others, c, &first, &files);
    if (st) st = transport::shm::createSecondPlane(c, dir, others, files, &l.t);
  } else {
    st = transport::shm::createTransport(c, dir, others, &l.t);
  }
  if (!st) die(kind + ": " + st.message());
  // The socket transport's lower rank accepts: connect in rank order so nobody waits in a cycle.
  // With bystanders only the workers connect, each pair to its partner.
  if (n == workers) {
    int a = (rank + n - 1) % n, b = (rank + 1) % n;
    for (int peer : {std::min(a, b), std::max(a, b)})
      if (!(st = l.t->connect(peer, deadline, peer == a ? &l.left : &l.right))) die("connect: " + st.message());
    if (a == b) l.right = l.left;
    l.conn = l.right;
  } else if (rank < workers && !(st = l.t->connect(rank ^ 1, deadline, &l.conn))) {
    die("connect: " + st.message());
  }
  if (!(st = store->barrier(dir.key_prefix + "go", n, deadline))) die("barrier: " + st.message());
  *kept = std::move(store);  // the store outlives the link (the socket transport may ask it again)
  return l;
}

void runRing(const Options& o, const std::string& kind, Link& l) {
  for (size_t bytes : {size_t(8), size_t(64 << 10)}) {
    double us = tokenRing(l, bytes, bytes > 4096 ? o.iters / 20 : o.iters / 4);
    if (l.rank == 0) std::printf("%-10s token ring of %d, %8s  %8.2f us per hop\n", kind.c_str(), l.n, formatBytes(bytes).c_str(), us);
  }
  for (size_t bytes : {size_t(1) << 20, size_t(64) << 20}) {
    double gbs = ringShift(l, bytes, o.stream_bytes);
    if (l.rank == 0) std::printf("%-10s ring shift of %d, %8s  %8.2f GB/s per rank\n", kind.c_str(), l.n, formatBytes(bytes).c_str(), gbs);
  }
  std::fflush(stdout);
}

// Ranks 0 and 1 ping-pong small messages while the bystanders wait in a store barrier.
void runBeside(const Options& o, const std::string& kind, Link& l, bootstrap::StoreClient& store) {
  const int n = o.ranks + o.bystanders;
  static std::vector<uint64_t> never(static_cast<size_t>(n));
  if (l.rank < 2 && kind == "shm-engine") {
    for (int peer = 2; peer < n; ++peer) {  // the engine's envelope receives, which nobody answers
      transport::Connection* c = nullptr;
      if (!l.t->connect(peer, Clock::now() + std::chrono::seconds(30), &c)) die("connect");
      c->postRecv(&never[static_cast<size_t>(peer)], sizeof(uint64_t), 99, 1'000'000 + peer);
    }
  }
  if (l.rank < 2) {
    for (size_t bytes : {size_t(8), size_t(4096), size_t(64 << 10)}) {
      double us = pingPong(l, bytes, bytes > 4096 ? o.iters / 4 : o.iters);
      if (l.rank == 0)
        std::printf("%-10s ping-pong beside %d idle local peers %8s  %8.2f us one-way\n", kind.c_str(), o.bystanders,
                    formatBytes(bytes).c_str(), us);
    }
    std::fflush(stdout);
  }
  Status st = store.barrier("pingpong/" + kind + "/done", n, Clock::now() + std::chrono::seconds(600));
  if (!st) die("barrier: " + st.message());
}

void runRank(const Options& o, const std::string& kind, int rank, const std::string& address, const std::string& secret) {
  std::unique_ptr<bootstrap::StoreClient> store;
  Link l = makeLink(kind, rank, o.ranks + o.bystanders, o.ranks, address, secret, &store);
  if (o.bystanders > 0) return runBeside(o, kind, l, *store);
  if (o.ranks > 2) return runRing(o, kind, l);
  for (size_t bytes : {size_t(8), size_t(4096), size_t(64 << 10), size_t(128 << 10), size_t(256 << 10)}) {
    double us = pingPong(l, bytes, bytes > 4096 ? o.iters / 4 : o.iters);
    if (rank == 0) std::printf("%-10s ping-pong %8s  %8.2f us one-way\n", kind.c_str(), formatBytes(bytes).c_str(), us);
  }
  for (size_t bytes : {size_t(256) << 10, size_t(1) << 20, size_t(4) << 20, size_t(64) << 20}) {
    double gbs = stream(l, bytes, o.stream_bytes);
    if (rank == 0) std::printf("%-10s stream    %8s  %8.2f GB/s\n", kind.c_str(), formatBytes(bytes).c_str(), gbs);
  }
  for (size_t bytes : {size_t(64) << 10, size_t(128) << 10, size_t(256) << 10, size_t(1) << 20, size_t(64) << 20}) {
    double gbs = bidirectional(l, bytes, o.stream_bytes);
    if (rank == 0) std::printf("%-10s both ways %8s  %8.2f GB/s each way\n", kind.c_str(), formatBytes(bytes).c_str(), gbs);
  }
  if (rank == 0) std::printf("%-10s (%s)\n", kind.c_str(), l.conn->describe().c_str());
  std::fflush(stdout);
}

void runPair(const Options& o, const std::string& kind) {
  std::string secret = bootstrap::generateSecret();
  std::unique_ptr<bootstrap::StoreServer> server;
  if (!bootstrap::StoreServer::start("127.0.0.1", 0, secret, &server)) die("cannot start the store");
  std::string address = "127.0.0.1:" + std::to_string(server->port());
  std::fflush(stdout);
  std::vector<pid_t> pids(o.ranks + o.bystanders);
  for (int r = 0; r < o.ranks + o.bystanders; ++r) {
    pids[r] = ::fork();
    if (pids[r] == 0) {
      runRank(o, kind, r, address, secret);
      std::fflush(stdout);
      std::_Exit(0);
    }
  }
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die(kind + ": a rank failed");
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--transports") {
      o.transports.clear();
      std::stringstream ss(v);
      for (std::string t; std::getline(ss, t, ',');) o.transports.push_back(t);
    } else if (k == "--ranks") {
      o.ranks = std::max(2, std::atoi(v.c_str()));
    } else if (k == "--bystanders") {
      o.bystanders = std::max(0, std::atoi(v.c_str()));
    } else if (k == "--iters") {
      o.iters = std::atoi(v.c_str());
    } else if (k == "--stream-bytes") {
      o.stream_bytes = std::strtoull(v.c_str(), nullptr, 10) << (v.back() == 'G' ? 30 : v.back() == 'M' ? 20 : 0);
    } else {
      die("usage: transport_pingpong [--transports shm,shm-slots,socket] [--ranks N] [--bystanders K] [--iters N] "
          "[--stream-bytes 1G]");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.bystanders > 0) o.ranks = 2;  // a pair beside them
  for (const std::string& kind : o.transports) runPair(o, kind);
  return 0;
}
