// What the shm transport costs in /dev/shm: a segment's rings take memory only as they are
// written (src/transport/shm/layout.h), so a host's shared memory grows with the channels in
// use, not with the square of its ranks; and a /dev/shm that fills up after start-up fails the
// first message that needs more, naming the cause and the knobs, instead of a SIGBUS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <string>

#include "transport/connection_conformance.h"
#include "transport/shm/layout.h"
#include "transport/shm/transport.h"

namespace coll::test {
namespace {

namespace shm = transport::shm;

const TransportUnderTest kShm{"shm", shm::createTransport, nullptr, shm::segmentNameFor};

constexpr int kSlots = 4;
constexpr size_t kSlotBytes = 64 << 10;
constexpr size_t kRing = kSlots * kSlotBytes;

Config smallRings(Config c) {
  c.shm_nslots = kSlots;
  c.shm_slot_bytes = kSlotBytes;
  c.shm_cma_threshold = 0;  // every byte through the slots
  return c;
}

// The bytes /dev/shm holds for this rank's own segment: the owner keeps its descriptor open
// (segment.h, Mapping::holdOwnerLock), so it is found among ours by name.
size_t ownSegmentBytes(const PeerDirectory& dir) {
  const std::string name = "/dev/shm" + shm::segmentNameFor(dir, dir.rank);
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    char target[PATH_MAX] = {};
    if (::readlink(fd.path().c_str(), target, sizeof target - 1) <= 0) continue;
    if (std::string(target).rfind(name, 0) != 0) continue;
    struct stat st{};
    if (::stat(fd.path().c_str(), &st) == 0) return static_cast<size_t>(st.st_blocks) * 512;
  }
  return SIZE_MAX;
}

// Three ranks, all on one host. Set up, each segment holds only its header and board. Rank 0
// sends 8 bytes to rank 1: the pair's controls take a page in each of their segments, and rank
// 1's a page of the ring. Then 1 MiB: rank 1's by the rest of the ring. Rank 2, whom nobody
// sends to, holds its header and board throughout, though a receive from rank 1 waits there
// all along (as the point-to-point engine's wait on every local peer).
TEST(ShmMemory, ARingTakesMemoryOnlyAsItIsWritten) {
  CaseOptions o;
  o.ranks = 3;
  o.configure = [](Config* c) { *c = smallRings(*c); };
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    shm::Geometry g{kSlotBytes, kSlots, 2};
    g.board = true;  // every rank on this host
    const size_t fixed = g.reservedBytes(), page = shm::kPageBytes;
    auto held = [&] { return ownSegmentBytes(ep.directory); };
    RANK_CHECK(held() == fixed, "after set-up the segment holds %zu bytes, expected its header and board, %zu", held(),
               fixed);
    ep.barrier("set-up measured");
    std::vector<uint8_t> out(1 << 20), in = recvBuffer(1 << 20);
    fillPattern(out.data(), out.size(), 7);
    uint64_t waiting = 0;
    if (ep.self.rank == 2) ep.conns[1]->postRecv(&waiting, sizeof waiting, 9, 9);
    auto oneMessage = [&](size_t bytes, uint64_t tag) {
      if (ep.self.rank == 0) ep.conns[1]->postSend(out.data(), bytes, tag, tag);
      if (ep.self.rank == 1) ep.conns[0]->postRecv(in.data(), bytes, tag, tag);
      if (ep.self.rank < 2)
        for (const auto& [cookie, s] : ep.wait(1)) RANK_CHECK(s.isOk(), "message %d: %s", int(cookie), s.message().c_str());
      ep.barrier("sent " + std::to_string(tag));
    };
    // What each rank's segment should hold beyond its fixed part: rank 0 a control page, rank 1
    // a control page and what the ring took, rank 2 nothing.
    auto expected = [&](size_t ring) { return fixed + (ep.self.rank == 0 ? page : ep.self.rank == 1 ? page + ring : 0); };
    oneMessage(8, 1);
    const size_t after_small = held();
    RANK_CHECK(after_small == expected(page), "after rank 0 sent rank 1 8 bytes: %zu, expected %zu", after_small,
               expected(page));
    ep.barrier("measured 1");  // before rank 0's next message lands in rank 1's segment
    oneMessage(1 << 20, 2);
    if (ep.self.rank == 1) checkPattern(in.data(), 1 << 20, 7, "1 MiB");
    const size_t after_large = held();
    RANK_CHECK(after_large == expected(kRing), "after rank 0 sent rank 1 1 MiB: %zu, expected %zu", after_large,
               expected(kRing));
    ep.barrier("measured 2");
    const uint64_t word = 0x1234;
    if (ep.self.rank == 1) ep.conns[2]->postSend(&word, sizeof word, 9, 9);
    if (ep.self.rank >= 1)
      for (const auto& [cookie, s] : ep.wait(1)) RANK_CHECK(s.isOk(), "the waiting receive: %s", s.message().c_str());
    if (ep.self.rank == 2) RANK_CHECK(waiting == word, "the waiting receive got %llx", (unsigned long long)waiting);
  }, o));
}

// A burst of large messages fills the ring; once the peer has read it all, the sender hands
// back every slot's pages but the first (Connection::releaseIdleBuffers, as the start-up link
// probe does after its 2 MiB transfers), and the next large message takes them again and
// arrives whole. While the peer has a message still to read, nothing is given back.
TEST(ShmMemory, ARingHandsBackAFinishedBurstsPages) {
  CaseOptions o;
  o.ranks = 2;
  o.configure = [](Config* c) { *c = smallRings(*c); };
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    shm::Geometry g{kSlotBytes, kSlots, 1};
    g.board = true;
    const size_t fixed = g.reservedBytes(), page = shm::kPageBytes;
    auto held = [&] { return ownSegmentBytes(ep.directory); };
    std::vector<uint8_t> out(kRing), in = recvBuffer(kRing);
    auto burst = [&](uint8_t seed, uint64_t tag) {
      fillPattern(out.data(), out.size(), seed);
      if (ep.self.rank == 0) ep.conns[1]->postSend(out.data(), kRing, tag, tag);
      if (ep.self.rank == 1) ep.conns[0]->postRecv(in.data(), kRing, tag, tag);
      for (const auto& [cookie, s] : ep.wait(1)) RANK_CHECK(s.isOk(), "burst %d: %s", int(cookie), s.message().c_str());
      if (ep.self.rank == 1) checkPattern(in.data(), kRing, seed, "a burst");
      ep.barrier("burst " + std::to_string(tag));  // rank 1 has read it all
    };
    const size_t full = fixed + page + kRing, released = fixed + page + kSlots * page;
    // Unread: a message in three slots, sent (it fits the ring) before rank 1 receives it.
    const size_t unread = 2 * kSlotBytes;
    fillPattern(out.data(), unread, 9);
    if (ep.self.rank == 0) {
      ep.conns[1]->postSend(out.data(), unread, 7, 7);
      for (const auto& [cookie, s] : ep.wait(1)) RANK_CHECK(s.isOk(), "the unread message: %s", s.message().c_str());
      ep.conns[1]->releaseIdleBuffers();  // must keep every page: rank 1 has read none
    }
    ep.barrier("sent unread");
    if (ep.self.rank == 1) {
      RANK_CHECK(held() == fixed + page + 2 * kSlotBytes + page, "with a message unread: %zu, expected %zu", held(),
                 fixed + page + 2 * kSlotBytes + page);
      std::vector<uint8_t> late = recvBuffer(unread);
      ep.conns[0]->postRecv(late.data(), unread, 7, 7);
      for (const auto& [cookie, s] : ep.wait(1)) RANK_CHECK(s.isOk(), "the unread message: %s", s.message().c_str());
      checkPattern(late.data(), unread, 9, "the message sent before the release");
    }
    ep.barrier("read");
    burst(3, 1);
    if (ep.self.rank == 1) RANK_CHECK(held() == full, "after a 256 KiB burst: %zu, expected %zu", held(), full);
    ep.barrier("measured full");
    if (ep.self.rank == 0) ep.conns[1]->releaseIdleBuffers();
    ep.barrier("released");
    if (ep.self.rank == 1) RANK_CHECK(held() == released, "after the release: %zu, expected %zu", held(), released);
    ep.barrier("measured released");
    burst(5, 2);
    if (ep.self.rank == 1) RANK_CHECK(held() == full, "after a second burst: %zu, expected %zu", held(), full);
  }, o));
}

// /dev/shm (a private 2 MiB one, in a mount namespace) is filled after set-up: rank 0's first
// message to rank 1 fails on rank 0 with an error naming /dev/shm, that it is full, the peer
// and the knobs (the pair's controls take their pages only now); rank 1's receive fails too
// (rank 0 gave the pair up), nobody gets a SIGBUS.
TEST(ShmMemory, AFullDevShmFailsTheFirstMessageThatNeedsMoreClearly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a private /dev/shm in a mount namespace";
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=2m"), 0) << std::strerror(errno);
  CaseOptions o;
  o.configure = [](Config* c) { *c = smallRings(*c); };
  expectAllSucceeded(runCase(kShm, [](Endpoint& ep) {
    ep.barrier("set up");
    if (ep.self.rank == 0) {  // fill what is left
      int fd = ::open("/dev/shm/filler", O_RDWR | O_CREAT, 0600);
      RANK_CHECK(fd >= 0, "open: %s", std::strerror(errno));
      for (off_t at = 0; ::posix_fallocate(fd, at, shm::kPageBytes) == 0;) at += shm::kPageBytes;
      ::close(fd);
    }
    ep.barrier("full");
    std::vector<uint8_t> out(kSlotBytes), in = recvBuffer(kSlotBytes);
    if (ep.self.rank == 0) ep.conns[1]->postSend(out.data(), out.size(), 1, 1);
    else ep.conns[0]->postRecv(in.data(), in.size(), 1, 1);
    for (const auto& [cookie, s] : ep.wait(1)) {
      RANK_CHECK(!s.isOk(), "the message went through a full /dev/shm");
      const std::string& m = s.message();
      if (ep.self.rank == 0)
        RANK_CHECK(m.find("cannot reserve") != std::string::npos && m.find("it is full") != std::string::npos &&
                       m.find("peer 1") != std::string::npos && m.find("COLL_SHM_NSLOTS") != std::string::npos &&
                       m.find("COLL_TRANSPORT=socket") != std::string::npos,
                   "unclear message: %s", m.c_str());
      else
        RANK_CHECK(m.find("peer 0") != std::string::npos && m.find("closed") != std::string::npos,
                   "unclear message: %s", m.c_str());
    }
    ep.barrier("both failed");  // /dev/shm stays full until then
    if (ep.self.rank == 0) ::unlink("/dev/shm/filler");
  }, o));
}

}  // namespace
}  // namespace coll::test
