// The physical limit for collectives between hosts when the CPUs, not the links, decide: plain
// TCP streams, one out of and one into each host, all at once (a ring of hosts), or a chain.
// No collective can send its bytes faster than bare sockets carry them, so the rate each
// stream gets while all run is the busbw ceiling of a ring all-reduce, all-gather or
// reduce-scatter over those hosts (every host sends and receives on one stream), and the
// chain's is that of a broadcast (n - 1 streams carry the buffer once each).
//
// One process per host; each listens, connects to the next host, and sends and receives
// BYTES at once. The kernel's own buffer sizing (autotuning) is left on, as gloo leaves it.
// Where the CPUs decide, so does memory: from a 4 MiB buffer that stays in cache 4 streams on
// 2 cores carried 0.72-0.81 GB/s each, walking 128 MiB each way 0.53-0.56 (2026-12-04), and a
// 256 MiB collective cannot keep its bytes in cache. --footprint gives the op's size.
// With several ranks a host, an algorithm also moves bytes between the ranks inside a host, on the
// same cores: --copy C --add A make each process, while its streams run, copy C and add A bytes
// (float32 sum, coll's kernel) for every byte it streams, walking buffers of the footprint's
// size: bare memcpy and reductions with no library in the way (host_floor.py says how much
// each collective must).
// Every wait has a deadline (--timeout); a failure names the step and the errno text.
//
// usage: tcp_streams [--listen PORT] [--to ADDR:PORT] [--bytes N] [--footprint N] [--reduce]
//                    [--copy C] [--add A] [--timeout SECONDS]
// prints: tcp_streams: sent S received R bytes in T s: G GB/s (BYTES / T, T until both directions
// are done)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "perf_options.h"
#include "reduce/reduce.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = size_t{4} << 20;  // what one send or recv call asks for

struct Options {
  int listen_port = 0;      // 0: receive nothing (the head of a chain)
  std::string to_addr;      // empty: send nothing (the tail of a chain)
  int to_port = 0;
  size_t bytes = size_t{512} << 20;
  // The memory each direction walks through, over and over: by default one call's worth, which
  // stays in cache. A collective moves its whole buffer through memory, receiving into some of
  // it and sending from the rest, so its ceiling is the rate at its footprint (--footprint 256M
  // for a 256 MiB op: 128 MiB sent from, 128 MiB received into, cycled).
  size_t buffer = kChunk;
  // --reduce: each received piece lands in a scratch slice and is then added (float32 sum, coll's
  // own kernel) into the footprint, as a reduce-scatter's step combines what it receives with
  // its own operand: the ceiling of a ring that reduces, where the CPUs decide.
  bool reduce = false;
  // --copy, --add: bytes copied and added inside the process per byte streamed (the work inside
  // a host that the streams between hosts do not make).
  double copy_per_byte = 0;
  double add_per_byte = 0;
  int timeout_s = 60;
};

[[noreturn]] void failWithout(const std::string& what) { throw std::runtime_error("tcp_streams: " + what); }

// A failed system call: the step and errno's text.
[[noreturn]] void fail(const std::string& step) { failWithout(step + ": " + std::strerror(errno)); }

Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--reduce") {
      o.reduce = true;
      continue;
    }
    if (i + 1 == argc) failWithout(flag + " wants a value");
    std::string value = argv[++i];
    if (flag == "--listen") {
      o.listen_port = std::atoi(value.c_str());
    } else if (flag == "--to") {
      auto colon = value.rfind(':');
      if (colon == std::string::npos) failWithout("--to wants ADDR:PORT, got " + value);
      o.to_addr = value.substr(0, colon);
      o.to_port = std::atoi(value.c_str() + colon + 1);
    } else if (flag == "--bytes") {
      if (!coll::bench::parseSize(value.c_str(), &o.bytes)) failWithout("--bytes wants a size like 512M, got " + value);
    } else if (flag == "--footprint") {
      size_t footprint = 0;
      if (!coll::bench::parseSize(value.c_str(), &footprint) || footprint < 2)
        failWithout("--footprint wants a size like 256M, got " + value);
      o.buffer = footprint / 2;
    } else if (flag == "--copy" || flag == "--add") {
      char* end = nullptr;
      double ratio = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(ratio >= 0 && ratio <= 1000))  // NaN fails both comparisons
        failWithout(flag + " wants bytes per byte streamed, 0 to 1000, like 1.5, got " + value);
      (flag == "--copy" ? o.copy_per_byte : o.add_per_byte) = ratio;
    } else if (flag == "--timeout") {
      o.timeout_s = std::atoi(value.c_str());
    } else {
      failWithout("unknown flag " + flag);
    }
  }
  if (!o.listen_port && o.to_addr.empty()) failWithout("give --listen, --to or both");
  return o;
}

// Blocking calls on the socket give up after the timeout instead of hanging on a dead peer.
void setDeadlines(int fd, int seconds) {
  timeval tv{seconds, 0};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv))
    fail("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)");
}

int listenOn(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(fd, 1)) fail("bind/listen on port " + std::to_string(port));
  return fd;
}

int acceptOne(int listener, int timeout_s) {
  pollfd p{listener, POLLIN, 0};
  int ready = poll(&p, 1, timeout_s * 1000);
  if (ready < 0) fail("poll on the listener");
  if (ready == 0) failWithout("no connection came in " + std::to_string(timeout_s) + " s");
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) fail("accept");
  return fd;
}

// The next host may not listen yet: retry until the deadline.
int connectTo(const Options& o) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(o.to_port);
  if (inet_pton(AF_INET, o.to_addr.c_str(), &a.sin_addr) != 1) failWithout("bad address " + o.to_addr);
  auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  while (true) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    if (Clock::now() > deadline) fail("connect to " + o.to_addr + ":" + std::to_string(o.to_port));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Where the call after `done` bytes reads or writes in a buffer of `size` walked in a cycle, and
// how much it may move there.
size_t placeOf(size_t done, size_t size, size_t bytes, size_t* len) {
  size_t at = done % size;
  *len = std::min({kChunk, size - at, bytes - done});
  return at;
}

void sendAll(int fd, size_t bytes, size_t size) {
  std::vector<char> buf(size, 1);  // touched: no page faults while timed
  for (size_t done = 0; done < bytes;) {
    size_t len = 0;
    size_t at = placeOf(done, size, bytes, &len);
    ssize_t n = send(fd, buf.data() + at, len, 0);
    if (n <= 0) fail("send after " + std::to_string(done) + " bytes");
    done += n;
  }
  shutdown(fd, SHUT_WR);
}

void receiveAll(int fd, size_t bytes, size_t size, bool reduce) {
  std::vector<char> buf(size, 0), scratch(reduce ? kChunk : 0, 0);
  for (size_t done = 0; done < bytes;) {
    size_t len = 0;
    size_t at = placeOf(done, size, bytes, &len);
    ssize_t n = recv(fd, reduce ? scratch.data() : buf.data() + at, len, reduce ? MSG_WAITALL : 0);
    if (n == 0) failWithout("the peer closed after " + std::to_string(done) + " bytes");
    if (n < 0) fail("recv after " + std::to_string(done) + " bytes");
    if (reduce)
      coll::reduce::reduceInto(buf.data() + at, scratch.data(), static_cast<size_t>(n) / sizeof(float),
                               coll::DataType::f32, coll::ReduceOp::sum);
    done += n;
  }
}

// The copies and adds inside a host that an algorithm makes beside its streams, and the two
// buffers of the footprint's half each they walk (so they leave the cache too), made and
// touched before the clock starts.
struct HostWork {
  size_t copy = 0, add = 0;  // bytes in all
  std::vector<char> from, into;
};

size_t wholeFloats(double bytes) { return static_cast<size_t>(bytes) & ~size_t{3}; }

HostWork prepareHostWork(const Options& o) {
  HostWork w;
  w.copy = wholeFloats(o.copy_per_byte * o.bytes);
  w.add = wholeFloats(o.add_per_byte * o.bytes);
  if (w.copy || w.add) {
    size_t size = std::max(wholeFloats(o.buffer), kChunk);
    w.from.assign(size, 1);
    w.into.assign(size, 0);
  }
  return w;
}

// Chunk by chunk, copies and adds kept in proportion all along, as the streams go.
void workInsideHost(HostWork& w) {
  size_t size = w.from.size();
  for (size_t copied = 0, added = 0; copied < w.copy || added < w.add;) {
    bool copy_next = added >= w.add || (copied < w.copy && double(copied) * w.add <= double(added) * w.copy);
    size_t len = 0;
    size_t at = copy_next ? placeOf(copied, size, w.copy, &len) : placeOf(added, size, w.add, &len);
    if (copy_next) {
      std::memcpy(w.into.data() + at, w.from.data() + at, len);
      copied += len;
    } else {
      coll::reduce::reduceInto(w.into.data() + at, w.from.data() + at, len / sizeof(float), coll::DataType::f32,
                               coll::ReduceOp::sum);
      added += len;
    }
  }
}

void run(const Options& o) {
  int listener = o.listen_port ? listenOn(o.listen_port) : -1;
  int out = o.to_addr.empty() ? -1 : connectTo(o);
  int in = listener >= 0 ? acceptOne(listener, o.timeout_s) : -1;
  for (int fd : {out, in})
    if (fd >= 0) setDeadlines(fd, o.timeout_s);
  HostWork host_work = prepareHostWork(o);
  auto start = Clock::now();
  std::string send_error, receive_error;
  std::thread local([&] { workInsideHost(host_work); });
  std::thread sender([&] {
    try {
      if (out >= 0) sendAll(out, o.bytes, o.buffer);
    } catch (const std::exception& e) {
      send_error = e.what();
    }
  });
  try {
    if (in >= 0) receiveAll(in, o.bytes, o.buffer, o.reduce);
  } catch (const std::exception& e) {
    receive_error = e.what();  // the sender is joined first: it ends by its own deadline
  }
  sender.join();
  local.join();
  for (const std::string& error : {receive_error, send_error})
    if (!error.empty()) throw std::runtime_error(error);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("tcp_streams: sent %zu received %zu bytes in %.4f s: %.4f GB/s\n", out >= 0 ? o.bytes : 0,
              in >= 0 ? o.bytes : 0, seconds, o.bytes / seconds / 1e9);
  for (int fd : {out, in, listener})
    if (fd >= 0) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parseOptions(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
