// The verbs transport's RC data path over fake NICs (tests/unit/fake_verbs_device.h): the
// same Connection/Transport code that runs over libibverbs, without an RDMA device. What this
// cannot show is the real device glue (ibv_device_ops.cc): this machine has no RDMA NIC.
#include <gtest/gtest.h>

#include <atomic>

#include "transport/verbs/device.h"
#include "transport/verbs/peer_card.h"
#include "unit/verbs_pair.h"

namespace coll::transport::verbs::testing {
namespace {

// Sizes around the 64-byte chunk and the 4-slot window: 0 and 1, primes inside one chunk and
// across several, exactly one window, more chunks than credits.
const size_t kSizes[] = {0, 1, 2, 3, 7, 61, 64, 65, 127, 251, 256, 257, 1031, 4099};

TEST(VerbsDataPath, MessagesOfEverySizeArriveIntactAndInOrder) {
  VerbsPair p;
  p.start();
  std::vector<std::vector<uint8_t>> in, out;
  std::set<uint64_t> sent, received;
  for (size_t i = 0; i < std::size(kSizes); ++i) {
    out.push_back(pattern(kSizes[i], static_cast<int>(i)));
    in.emplace_back(kSizes[i], 0xee);
    p.c[1]->postRecv(in[i].data(), kSizes[i], 100 + i, i);
    received.insert(i);
  }
  for (size_t i = 0; i < std::size(kSizes); ++i) {
    p.c[0]->postSend(out[i].data(), kSizes[i], 100 + i, i);
    sent.insert(i);
  }
  ASSERT_TRUE(p.drive(sent, received));
  for (size_t i = 0; i < std::size(kSizes); ++i) {
    EXPECT_TRUE(p.done[0][i].isOk()) << p.done[0][i].message();
    ASSERT_TRUE(p.done[1][i].isOk()) << p.done[1][i].message();
    EXPECT_EQ(in[i], out[i]) << kSizes[i] << " bytes";
  }
}

TEST(VerbsDataPath, ReceivesPostedAfterTheDataArrivedStillMatchInOrder) {
  VerbsPair p;
  p.start();
  const int kMessages = 40;  // ten windows' worth of single-chunk messages, each way
  std::vector<std::vector<uint8_t>> out, in(kMessages, std::vector<uint8_t>(50));
  std::set<uint64_t> cookies;
  for (int i = 0; i < kMessages; ++i) {
    out.push_back(pattern(50, i));
    p.c[0]->postSend(out[i].data(), 50, 7, i);
    cookies.insert(i);
  }
  for (int i = 0; i < 5; ++i) p.collect(0, Clock::now());
  EXPECT_LT(p.done[0].size(), size_t{kMessages});  // the window holds the rest back
  for (int i = 0; i < kMessages; ++i) p.c[1]->postRecv(in[i].data(), 50, 7, i);
  ASSERT_TRUE(p.drive(cookies, cookies));
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ(in[i], out[i]) << "message " << i;
}

TEST(VerbsDataPath, BothDirectionsAtOnceFromTwoThreads) {
  VerbsPair p;
  p.start();
  const int kMessages = 30;
  std::vector<uint8_t> out[2][kMessages], in[2][kMessages];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < kMessages; ++i) {
      out[r][i] = pattern(300 + 37 * i, r * 100 + i);
      in[r][i].assign(out[r][i].size(), 0);
    }
  auto run = [&](int r) {
    for (int i = 0; i < kMessages; ++i) {
      p.c[r]->postRecv(in[r][i].data(), in[r][i].size(), i, 1000 + i);
      p.c[r]->postSend(out[r][i].data(), out[r][i].size(), i, i);
    }
    Deadline end = Clock::now() + 5s;
    while (p.done[r].size() < 2 * kMessages && Clock::now() < end) p.collect(r, Clock::now() + 1ms);
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(p.done[r].size(), size_t{2 * kMessages}) << "rank " << r;
    for (auto& [cookie, st] : p.done[r]) EXPECT_TRUE(st.isOk()) << st.message();
    for (int i = 0; i < kMessages; ++i) EXPECT_EQ(in[r][i], out[1 - r][i]) << "rank " << r << " message " << i;
  }
}

TEST(VerbsDataPath, ABufferSentAgainAndAgainIsRegisteredOnce) {
  VerbsPair p;
  p.start();
  int before = p.nic[0]->registrations();
  std::vector<uint8_t> out = pattern(1000, 1), in(1000);
  for (uint64_t i = 0; i < 10; ++i) {
    p.c[1]->postRecv(in.data(), in.size(), 5, i);
    p.c[0]->postSend(out.data(), out.size(), 5, i);
    ASSERT_TRUE(p.drive({i}, {i}));
  }
  EXPECT_EQ(p.nic[0]->registrations(), before + 1);
  EXPECT_EQ(in, out);
}

TEST(VerbsDataPath, LargeDefaultWindowMovesAMegabyte) {
  VerbsPair p;
  p.start(VerbsOptions{});  // the production window: 16 slots of 128 KiB
  std::vector<uint8_t> out = pattern(1 << 20, 3), in(1 << 20);
  p.c[1]->postRecv(in.data(), in.size(), 1, 1);
  p.c[0]->postSend(out.data(), out.size(), 1, 1);
  ASSERT_TRUE(p.drive({1}, {1}));
  EXPECT_EQ(in, out);
}

TEST(VerbsDataPath, ClosedPeerDeliversWhatItSentThenFailsTheRest) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> out = pattern(200, 9), in(200), more(10);
  p.c[1]->postSend(out.data(), out.size(), 3, 1);
  ASSERT_TRUE(p.drive({}, {1}));
  p.t[1].reset();  // says goodbye
  p.c[0]->postRecv(in.data(), in.size(), 3, 1);
  p.c[0]->postRecv(more.data(), more.size(), 4, 2);
  ASSERT_TRUE(p.drive({1, 2}, {}));
  EXPECT_TRUE(p.done[0][1].isOk()) << p.done[0][1].message();
  EXPECT_EQ(in, out);
  EXPECT_EQ(p.done[0][2].code(), ErrorCode::PeerLost);
  EXPECT_NE(p.done[0][2].message().find("peer 1 (verbs) closed"), std::string::npos) << p.done[0][2].message();
}

// The one test of ibv_device_ops.cc: two ranks in this process over the real device, looping
// back through the NIC. Skips, saying why, where there is none (every machine of ours so far).
TEST(VerbsRealDevice, LoopbackMovesMessagesWhereADeviceExists) {
  DeviceChoice d;
  Status probe = findDevice(&d);
  if (!probe.isOk()) GTEST_SKIP() << probe.message();
  VerbsPair p;
  p.start(VerbsOptions{}, /*real=*/true);
  std::vector<uint8_t> out = pattern(3 << 20, 5), in(3 << 20), none;
  p.c[1]->postRecv(in.data(), in.size(), 1, 1);
  p.c[1]->postRecv(none.data(), 0, 2, 2);
  p.c[0]->postSend(out.data(), out.size(), 1, 1);
  p.c[0]->postSend(none.data(), 0, 2, 2);
  ASSERT_TRUE(p.drive({1, 2}, {1, 2}));
  for (int r = 0; r < 2; ++r)
    for (auto& [cookie, st] : p.done[r]) EXPECT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(in, out);
}

TEST(VerbsCard, RoundTripsAndRefusesGarbage) {
  PeerCard c;
  c.qp.qpn = 0x1234;
  c.qp.psn = 0xabcdef;
  c.qp.lid = 7;
  c.qp.gid[3] = 9;
  c.qp.mtu = 3;
  c.slots_addr = 0x7f0000001000;
  c.slots_rkey = 0x55;
  c.credits = 16;
  c.chunk_bytes = 4096;
  PeerCard d;
  ASSERT_TRUE(PeerCard::decode(c.encode(), 2, &d).isOk());
  EXPECT_EQ(d.qp.qpn, c.qp.qpn);
  EXPECT_EQ(d.qp.psn, c.qp.psn);
  EXPECT_EQ(d.qp.gid[3], 9);
  EXPECT_EQ(d.slots_addr, c.slots_addr);
  EXPECT_EQ(d.chunk_bytes, c.chunk_bytes);
  Status st = PeerCard::decode("short", 2, &d);
  EXPECT_NE(st.message().find("peer 2"), std::string::npos) << st.message();
  c.credits = 0;
  EXPECT_FALSE(PeerCard::decode(c.encode(), 2, &d).isOk());
}

}  // namespace
}  // namespace coll::transport::verbs::testing
