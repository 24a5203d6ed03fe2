// The forked-rank fixture of the conformance suite (connection_conformance.h).
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "transport/connection_conformance.h"

namespace coll::test {
namespace {

constexpr auto kCaseLimit = std::chrono::seconds(20);
constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuard = 0xA5;
constexpr int kMaxRanks = 8;

// Filled in by the children (inherited MAP_SHARED memory), read by the parent after the run.
struct ShmNames {
  char name[kMaxRanks][128];
};

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void connectAll(Endpoint& ep) {
  ep.conns.assign(ep.self.size, nullptr);
  for (int r = 0; r < ep.self.size; ++r) {
    if (r == ep.self.rank) continue;
    Status st = ep.transport->connect(r, ep.deadline, &ep.conns[r]);
    RANK_CHECK(st.isOk(), "connect(%d): %s", r, st.message().c_str());
  }
}

void runRank(const TransportUnderTest& t, const CaseBody& body, const CaseOptions& options, ShmNames* names,
             Rank& self, const std::string& address, const std::string& secret) {
  std::unique_ptr<bootstrap::StoreClient> store;
  Status st = bootstrap::StoreClient::connect(address, secret, transport::Clock::now() + std::chrono::seconds(10), &store);
  RANK_CHECK(st.isOk(), "store: %s", st.message().c_str());
  Endpoint ep{self};
  ep.store = store.get();
  ep.store_address = address;
  ep.directory = PeerDirectory{self.rank, self.size, secret, "conformance/", store.get(), "127.0.0.1"};
  if (t.shm_name) std::snprintf(names->name[self.rank], sizeof names->name[0], "%s", t.shm_name(ep.directory, self.rank).c_str());
  if (options.create_transport) {
    std::vector<int> peers;
    for (int r = 0; r < self.size; ++r)
      if (r != self.rank) peers.push_back(r);
    st = createFor(t, ep, caseConfig(t, options), peers, &ep.owned);
    RANK_CHECK(st.isOk(), "creating the %s transport: %s", t.name.c_str(), st.message().c_str());
    if (t.shm_name)
      RANK_CHECK(::access(("/dev/shm" + t.shm_name(ep.directory, self.rank)).c_str(), F_OK) != 0,
                 "the segment's name is still in /dev/shm after set-up");
    ep.transport = ep.owned.get();
    ep.deadline = transport::Clock::now() + kCaseLimit;
    connectAll(ep);
  } else {
    ep.deadline = transport::Clock::now() + kCaseLimit;
  }
  body(ep);
}

}  // namespace

std::string transportParamName(const ::testing::TestParamInfo<TransportUnderTest>& info) { return info.param.name; }

Config caseConfig(const TransportUnderTest& t, const CaseOptions& options) {
  Config c = Config::global();
  c.timeout = std::chrono::seconds(10);
  c.shm_cma_auto = false;  // the cases choose CMA or slots themselves
  if (t.configure) t.configure(&c);
  if (options.configure) options.configure(&c);
  return c;
}

Status createFor(const TransportUnderTest& t, Endpoint& ep, const Config& config, const std::vector<int>& peers,
                 std::unique_ptr<Transport>* out) {
  return t.create(config, ep.directory, peers, out);
}

std::vector<RankOutcome> runCase(const TransportUnderTest& t, const CaseBody& body, const CaseOptions& options) {
  void* mem = ::mmap(nullptr, sizeof(ShmNames), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    ADD_FAILURE() << "mmap: " << std::strerror(errno);
    return {};
  }
  auto* names = static_cast<ShmNames*>(mem);
  std::memset(names, 0, sizeof *names);
  RunOptions run = options.run;
  run.deadline = std::min(run.deadline, std::chrono::milliseconds(60'000));
  auto rank = [&](Rank& self, const std::string& address, const std::string& secret) {
    runRank(t, body, options, names, self, address, secret);
  };
  auto outcomes = t.threads ? runThreads(options.ranks, rank, run) : runProcesses(options.ranks, rank, run);
  for (int r = 0; r < options.ranks && r < kMaxRanks; ++r) {
    if (names->name[r][0] == '\0') continue;
    std::string path = std::string("/dev/shm") + names->name[r];
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "rank " << r << " left " << path << " behind";
    ::unlink(path.c_str());  // do not leave it to the next run
  }
  ::munmap(mem, sizeof(ShmNames));
  return outcomes;
}

std::map<uint64_t, Status> Endpoint::wait(size_t count, const std::function<void()>& after_each) {
  std::map<uint64_t, Status> done;
  std::vector<transport::Completion> batch;
  while (done.size() < count) {
    batch.clear();
    Status st = transport->progress(&batch, deadline);
    for (auto& c : batch) done[c.cookie] = c.status;
    if (after_each) after_each();
    RANK_CHECK(st.isOk() || done.size() >= count, "progress failed with %zu of %zu requests done: %s", done.size(),
               count, st.message().c_str());
    RANK_CHECK(!batch.empty() || transport::Clock::now() < deadline, "only %zu of %zu requests completed in time",
               done.size(), count);
  }
  return done;
}

void Endpoint::barrier(const std::string& name) {
  Status st = store->barrier("conformance/test/" + name, self.size, deadline);
  RANK_CHECK(st.isOk(), "barrier %s: %s", name.c_str(), st.message().c_str());
}

bool awaitPhase(const RankSlot& slot, int phase, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (slot.phase.load() < phase) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void fillPattern(uint8_t* p, size_t bytes, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = mix64(seed * 0x100000001B3ull + i / 8);
    std::memcpy(p + i, &v, 8);
  }
  if (i < bytes) {
    uint64_t v = mix64(seed * 0x100000001B3ull + i / 8);
    std::memcpy(p + i, &v, bytes - i);
  }
}

void checkPattern(const uint8_t* p, size_t bytes, uint64_t seed, const char* what) {
  std::vector<uint8_t> expected(bytes);
  fillPattern(expected.data(), bytes, seed);
  if (bytes > 0 && std::memcmp(p, expected.data(), bytes) != 0) {
    size_t bad = 0;
    while (p[bad] == expected[bad]) ++bad;
    RANK_CHECK(false, "%s (%zu bytes): wrong byte at offset %zu: %#x instead of %#x", what, bytes, bad, p[bad],
               expected[bad]);
  }
  for (size_t g = 0; g < kGuardBytes; ++g)
    RANK_CHECK(p[bytes + g] == kGuard, "%s (%zu bytes): written past its end (guard byte %zu)", what, bytes, g);
}

std::vector<uint8_t> recvBuffer(size_t bytes) {
  std::vector<uint8_t> b(bytes + kGuardBytes, 0);
  std::memset(b.data() + bytes, kGuard, kGuardBytes);
  return b;
}

}  // namespace coll::test
