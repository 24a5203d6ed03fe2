// What only the shm transport promises, beyond the conformance suite: set-up among ranks of
// which only some share a host or whose network namespaces differ, a clear error when /dev/shm is too small, nothing left in
// /dev/shm after a rank crashed during set-up, and a description that names the copy path.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "transport/connection_conformance.h"
#include "transport/shm/transport.h"

namespace coll::test {
namespace {

using namespace std::chrono_literals;

const TransportUnderTest kShm{"shm", transport::shm::createTransport, nullptr, transport::shm::segmentNameFor};

// Ranks 0 and 1 share a host, rank 2 is alone (it creates no segment but joins the set-up).
TEST(ShmTransport, OnlySomeRanksShareTheHost) {
  CaseOptions o;
  o.ranks = 3;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    std::vector<int> peers;
    if (ep.self.rank < 2) peers.push_back(1 - ep.self.rank);
    Status st = createFor(kShm, ep, caseConfig(kShm, {}), peers, &ep.owned);
    RANK_CHECK(st.isOk(), "set-up: %s", st.message().c_str());
    ep.transport = ep.owned.get();
    Connection* conn = nullptr;
    for (int r = 0; r < 3; ++r) {
      if (r == ep.self.rank) continue;
      st = ep.transport->connect(r, ep.deadline, &conn);
      bool local = ep.self.rank < 2 && r < 2;
      RANK_CHECK(local ? st.isOk() : st.code() == ErrorCode::InvalidArgument && !st.isOk(), "connect(%d): %s", r,
                 st.isOk() ? "ok" : st.message().c_str());
    }
    if (ep.self.rank == 2) return;
    std::vector<pollfd> fds;
    RANK_CHECK(ep.transport->pollFds(&fds) && fds.size() == 1, "the peer in this network namespace cannot wake us");
    (void)ep.transport->connect(1 - ep.self.rank, ep.deadline, &conn);
    std::string want = strprintf("peer %d (same host, shm, cma)", 1 - ep.self.rank);
    RANK_CHECK(conn->describe() == want, "describe(): '%s', expected '%s'", conn->describe().c_str(), want.c_str());
    std::vector<uint8_t> out(1 << 20), in = recvBuffer(1 << 20);
    fillPattern(out.data(), out.size(), ep.self.rank);
    conn->postSend(out.data(), out.size(), 1, 1);
    conn->postRecv(in.data(), in.size() - 64, 1, 2);
    for (const auto& [cookie, s] : ep.wait(2)) RANK_CHECK(s.isOk(), "request %d: %s", int(cookie), s.message().c_str());
    checkPattern(in.data(), 1 << 20, 1 - ep.self.rank, "message");
  }, o));
}

// Ranks 0 and 1 count ranks 0, 1 and 2 on their host, rank 2 only 0 and itself: every rank's
// set-up fails, naming a peer and the disagreement, and nobody waits out a deadline for another.
TEST(ShmTransport, RanksThatDisagreeOnTheirHostFailSetUpClearly) {
  CaseOptions o;
  o.ranks = 3;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    const std::vector<std::vector<int>> peers{{1, 2}, {0, 2}, {0}};
    const auto start = std::chrono::steady_clock::now();
    Status st = createFor(kShm, ep, caseConfig(kShm, {}), peers[ep.self.rank], &ep.owned);
    RANK_CHECK(!st.isOk(), "set-up succeeded though rank 2 does not count rank 1 on its host");
    const std::string& m = st.message();
    RANK_CHECK(m.find("disagree on host grouping") != std::string::npos && m.find("peer ") != std::string::npos,
               "unclear message: %s", m.c_str());
    RANK_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10), "set-up took %s to fail",
               m.c_str());
  }, o));
}

// Makes process_vm_readv fail with EPERM in this process, as Docker's default seccomp profile
// does (without CAP_SYS_PTRACE).
bool forbidCrossMemoryAttach() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Rank 1 may not read rank 0's memory: the probe finds out at set-up, rank 0's large messages
// come through the slots and rank 1's still by CMA ("cma one way"); data arrives intact.
TEST(ShmTransport, FallsBackToSlotsWhereCmaIsForbidden) {
  CaseOptions o;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    int peer = 1 - ep.self.rank;
    if (ep.self.rank == 1) RANK_CHECK(forbidCrossMemoryAttach(), "cannot install the seccomp filter");
    Status st = createFor(kShm, ep, caseConfig(kShm, {}), {peer}, &ep.owned);
    RANK_CHECK(st.isOk(), "set-up: %s", st.message().c_str());
    ep.transport = ep.owned.get();
    Connection* conn = nullptr;
    RANK_CHECK(ep.transport->connect(peer, ep.deadline, &conn).isOk(), "connect");
    std::string want = strprintf("peer %d (same host, shm, cma one way)", peer);
    RANK_CHECK(conn->describe() == want, "describe(): '%s', expected '%s'", conn->describe().c_str(), want.c_str());
    std::vector<uint8_t> out(4 << 20), in = recvBuffer(4 << 20);
    fillPattern(out.data(), out.size(), ep.self.rank);
    conn->postSend(out.data(), out.size(), 1, 1);
    conn->postRecv(in.data(), 4 << 20, 1, 2);
    for (const auto& [cookie, s] : ep.wait(2)) RANK_CHECK(s.isOk(), "request %d: %s", int(cookie), s.message().c_str());
    checkPattern(in.data(), 4 << 20, peer, "message");
  }, o));
}

// Rank 1 runs in a network namespace of its own, so neither can reach the other's wake socket
// (an abstract address): set-up finds that from the namespaces in the headers, each rank then
// waits in slices rather than in poll() (pollFds refuses), and messages still arrive.
TEST(ShmTransport, RanksInTwoNetworkNamespacesDoNotWaitInPoll) {
  if (::geteuid() != 0) GTEST_SKIP() << "a network namespace of its own needs root";
  CaseOptions o;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    const int peer = 1 - ep.self.rank;
    if (ep.self.rank == 1) RANK_CHECK(::unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET): %s", std::strerror(errno));
    Status st = createFor(kShm, ep, caseConfig(kShm, {}), {peer}, &ep.owned);
    RANK_CHECK(st.isOk(), "set-up: %s", st.message().c_str());
    ep.transport = ep.owned.get();
    std::vector<pollfd> fds;
    RANK_CHECK(!ep.transport->pollFds(&fds), "waits in poll() though its peer cannot wake it there");
    Connection* conn = nullptr;
    RANK_CHECK(ep.transport->connect(peer, ep.deadline, &conn).isOk(), "connect");
    std::vector<uint8_t> out(1 << 16), in = recvBuffer(1 << 16);
    fillPattern(out.data(), out.size(), ep.self.rank);
    conn->postSend(out.data(), out.size(), 1, 1);
    conn->postRecv(in.data(), 1 << 16, 1, 2);
    for (const auto& [cookie, s] : ep.wait(2)) RANK_CHECK(s.isOk(), "request %d: %s", int(cookie), s.message().c_str());
    checkPattern(in.data(), 1 << 16, peer, "message");
  }, o));
}

// Rings that cannot fit: every rank fails at once (not at the timeout) with a message naming
// what /dev/shm has, what coll needs and both ways out. Nothing is allocated on the way.
TEST(ShmTransport, DevShmTooSmall) {
  CaseOptions o;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    Config c = caseConfig(kShm, {});
    c.shm_slot_bytes = 64 << 20;
    c.shm_nslots = 1 << 20;  // 64 TiB per peer
    auto start = std::chrono::steady_clock::now();
    Status st = createFor(kShm, ep, c, {1 - ep.self.rank}, &ep.owned);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RANK_CHECK(!st.isOk(), "set-up succeeded");
    const std::string& m = st.message();
    bool own = m.find("/dev/shm holds ") != std::string::npos;
    bool peers = m.find("could not set up shared memory") != std::string::npos;  // the peer's failure came first
    RANK_CHECK(own || peers, "unexpected message: %s", m.c_str());
    if (own)
      RANK_CHECK(m.find("2 ranks on this host need 128") != std::string::npos &&
                 m.find("--shm-size") != std::string::npos && m.find("COLL_TRANSPORT=socket") != std::string::npos,
                 "unclear message: %s", m.c_str());
    RANK_CHECK(took < 5.0, "failing took %.1f s", took);
  }, o));
}

// Rank 1 is SIGKILLed while its segment exists (set-up cannot finish before rank 2 arrives).
// The survivors fail within the timeout and remove the dead rank's name too.
TEST(ShmTransport, RankKilledDuringSetUpLeavesNothingBehind) {
  CaseOptions o;
  o.ranks = 3;
  o.create_transport = false;
  o.configure = [](Config* c) { c->timeout = 3s; };
  o.run.parent_action = [](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!awaitPhase(slots[1], 1)) return;
    ::kill(pids[1], SIGKILL);
    slots[2].phase = 1;  // go
  };
  auto outcomes = runCase(kShm, [&](Endpoint& ep) {
    std::vector<int> peers;
    for (int r = 0; r < 3; ++r)
      if (r != ep.self.rank) peers.push_back(r);
    if (ep.self.rank == 1) {
      std::thread([name = "/dev/shm" + transport::shm::segmentNameFor(ep.directory, 1), &ep] {
        while (::access(name.c_str(), F_OK) != 0) std::this_thread::sleep_for(1ms);
        ep.self.slot->phase = 1;  // the segment exists: kill me
      }).detach();
    }
    if (ep.self.rank == 2) RANK_CHECK(awaitPhase(*ep.self.slot, 1), "never told to go");
    Status st = createFor(kShm, ep, caseConfig(kShm, o), peers, &ep.owned);
    RANK_CHECK(!st.isOk(), "set-up succeeded without rank 1");
  }, o);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[1].signal, SIGKILL) << outcomes[1].describe();
  for (int r : {0, 2}) EXPECT_TRUE(outcomes[r].exited && outcomes[r].exit_code == 0) << outcomes[r].describe();
}

// Lines of /proc/self/maps naming a coll segment, and pidfds open in this process.
size_t segmentMappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/dev/shm/coll-") != std::string::npos;
  return n;
}

size_t pidfds() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    n += std::filesystem::read_symlink(e.path(), ec).string() == "anon_inode:[pidfd]";
  }
  return n;
}

// Drives `t` until the requests `cookies` completed (their statuses) or 10 s passed.
std::map<uint64_t, Status> drive(transport::Transport* t, std::set<uint64_t> cookies) {
  std::map<uint64_t, Status> done;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (done.size() < cookies.size() && std::chrono::steady_clock::now() < end) {
    std::vector<transport::Completion> out;
    Status st = t->progress(&out, std::chrono::steady_clock::now() + 10ms);
    for (transport::Completion& c : out)
      if (cookies.count(c.cookie)) done.emplace(c.cookie, c.status);
    if (!st && out.empty()) break;
  }
  return done;
}

// The point-to-point engine's plane (layout.h): a second transport over the same segments maps
// nothing and opens no pidfd of its own; the two planes carry messages of the same tag apart;
// an abort of one plane fails its peer's connection on that plane only.
TEST(ShmTransport, TheSecondPlaneSharesTheMappingsAndStandsApart) {
  CaseOptions o;
  o.ranks = 3;
  o.create_transport = false;
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    std::vector<int> peers;
    for (int r = 0; r < 3; ++r)
      if (r != ep.self.rank) peers.push_back(r);
    const Config c = caseConfig(kShm, {});
    std::unique_ptr<transport::Transport> first, second;
    std::shared_ptr<transport::shm::SegmentFiles> files;
    Status st = transport::shm::createTransportWithSecondPlane(c, ep.directory, peers, c, &first, &files);
    RANK_CHECK(st.isOk(), "set-up: %s", st.message().c_str());
    const size_t maps = segmentMappings(), fds = pidfds();
    RANK_CHECK(maps >= 3 && fds == 2, "%zu mappings of segments and %zu pidfds after set-up", maps, fds);
    st = transport::shm::createSecondPlane(c, ep.directory, peers, files, &second);
    RANK_CHECK(st.isOk(), "second plane: %s", st.message().c_str());
    RANK_CHECK(segmentMappings() == maps && pidfds() == fds, "the second plane mapped %zu more and opened %zu pidfds",
               segmentMappings() - maps, pidfds() - fds);
    RANK_CHECK(!transport::shm::createSecondPlane(c, ep.directory, peers, files, &second).isOk(),
               "a second plane served twice");
    // Rank 0 and rank 1 exchange a message of tag 7 on each plane, different bytes on each.
    if (ep.self.rank == 2) return;
    const int peer = 1 - ep.self.rank;
    transport::Connection *a = nullptr, *b = nullptr;
    RANK_CHECK(first->connect(peer, ep.deadline, &a).isOk() && second->connect(peer, ep.deadline, &b).isOk(), "connect");
    std::vector<uint8_t> out_a(3 << 20), out_b(5000), in_a = recvBuffer(3 << 20), in_b = recvBuffer(5000);
    fillPattern(out_a.data(), out_a.size(), 10 + ep.self.rank);
    fillPattern(out_b.data(), out_b.size(), 20 + ep.self.rank);
    b->postRecv(in_b.data(), out_b.size(), 7, 3);
    a->postRecv(in_a.data(), out_a.size(), 7, 1);
    b->postSend(out_b.data(), out_b.size(), 7, 4);
    a->postSend(out_a.data(), out_a.size(), 7, 2);
    for (const auto& [cookie, s] : drive(second.get(), {3, 4})) RANK_CHECK(s.isOk(), "plane 2, %d: %s", int(cookie), s.message().c_str());
    for (const auto& [cookie, s] : drive(first.get(), {1, 2})) RANK_CHECK(s.isOk(), "plane 1, %d: %s", int(cookie), s.message().c_str());
    checkPattern(in_a.data(), out_a.size(), 10 + peer, "first plane's message");
    checkPattern(in_b.data(), out_b.size(), 20 + peer, "second plane's message");
    // Rank 0 aborts its second plane: rank 1's receive there fails, its first plane still carries.
    if (ep.self.rank == 0) second->abort("the engine stopped");
    else {
      b->postRecv(in_b.data(), out_b.size(), 8, 5);
      auto failed = drive(second.get(), {5});
      RANK_CHECK(failed.size() == 1 && !failed[5].isOk() && failed[5].message().find("the engine stopped") != std::string::npos,
                 "a receive on the aborted plane: %s", failed.empty() ? "never ended" : failed[5].message().c_str());
    }
    std::vector<uint8_t> in_c = recvBuffer(64);
    a->postRecv(in_c.data(), 64, 9, 6);
    a->postSend(out_a.data(), 64, 9, 7);
    for (const auto& [cookie, s] : drive(first.get(), {6, 7})) RANK_CHECK(s.isOk(), "plane 1 after the abort, %d: %s", int(cookie), s.message().c_str());
    checkPattern(in_c.data(), 64, 10 + peer, "first plane's message after the abort");
  }, o));
}

}  // namespace
}  // namespace coll::test
