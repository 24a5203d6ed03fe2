// How the verbs data path fails, over fake NICs: mismatched calls, a completion error from the
// NIC, deadlines, abort() from another thread, and no device at all. Every error must name the
// step, the peer and the cause, and after the first one every request gets the same Status.
#include <gtest/gtest.h>

#include "transport/registry.h"
#include "transport/verbs/device.h"
#include "unit/verbs_pair.h"

namespace coll::transport::verbs::testing {
namespace {

bool has(const Status& st, const char* text) { return st.message().find(text) != std::string::npos; }

TEST(VerbsFailure, TagMismatchFailsTheReceiverAndTellsTheSender) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> out = pattern(100, 1), in(100), later(4);
  p.c[0]->postSend(out.data(), out.size(), 0x11, 1);
  p.c[1]->postRecv(in.data(), in.size(), 0x22, 1);
  p.c[1]->postRecv(later.data(), later.size(), 0x33, 2);
  ASSERT_TRUE(p.drive({1}, {1, 2}));
  Status st = p.done[1][1];
  EXPECT_EQ(st.code(), ErrorCode::Mismatch);
  EXPECT_TRUE(has(st, "peer 0") && has(st, "0x11") && has(st, "0x22")) << st.message();
  EXPECT_EQ(p.done[1][2].message(), st.message());  // the first failure sticks
  p.c[1]->postSend(out.data(), 1, 0x44, 3);
  ASSERT_TRUE(p.drive({}, {3}));
  EXPECT_EQ(p.done[1][3].message(), st.message());
  // The sender hears the goodbye: its next request fails, naming why.
  p.c[0]->postRecv(in.data(), in.size(), 0x55, 4);
  ASSERT_TRUE(p.drive({4}, {}));
  EXPECT_EQ(p.done[0][4].code(), ErrorCode::PeerLost);
  EXPECT_TRUE(has(p.done[0][4], "peer 1 (verbs) failed")) << p.done[0][4].message();
}

TEST(VerbsFailure, LengthMismatchIsCaughtBeforeAnyByteIsCopied) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> out = pattern(300, 2), in(200, 0xee);
  p.c[0]->postSend(out.data(), out.size(), 9, 1);
  p.c[1]->postRecv(in.data(), in.size(), 9, 1);
  ASSERT_TRUE(p.drive({}, {1}));
  EXPECT_EQ(p.done[1][1].code(), ErrorCode::Mismatch);
  EXPECT_TRUE(has(p.done[1][1], "300 bytes") && has(p.done[1][1], "200 bytes")) << p.done[1][1].message();
  EXPECT_EQ(in, std::vector<uint8_t>(200, 0xee));
}

TEST(VerbsFailure, InjectedCompletionErrorFailsEveryPostedAndLaterRequest) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> a = pattern(100, 1), b = pattern(500, 2), in(64);
  p.nic[0]->failSend(2, "transport retry counter exceeded", true);  // the 3rd write fails
  p.c[0]->postRecv(in.data(), in.size(), 8, 10);
  p.c[0]->postSend(a.data(), a.size(), 1, 1);  // 2 chunks: completes
  p.c[0]->postSend(b.data(), b.size(), 2, 2);  // its first chunk fails
  ASSERT_TRUE(p.drive({1, 2, 10}, {}));
  EXPECT_TRUE(p.done[0][1].isOk()) << p.done[0][1].message();
  Status st = p.done[0][2];
  EXPECT_EQ(st.code(), ErrorCode::PeerLost);
  EXPECT_TRUE(has(st, "peer 1") && has(st, "RDMA write of message #1") && has(st, "retry counter exceeded"))
      << st.message();
  EXPECT_EQ(p.done[0][10].message(), st.message());
  p.c[0]->postSend(a.data(), a.size(), 3, 3);
  p.c[0]->postRecv(in.data(), in.size(), 4, 4);
  ASSERT_TRUE(p.drive({3, 4}, {}));
  EXPECT_EQ(p.done[0][3].message(), st.message());
  EXPECT_EQ(p.done[0][4].message(), st.message());
}

TEST(VerbsFailure, ProgressReturnsAtItsDeadlineWhenNothingComes) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> in(10);
  p.c[1]->postRecv(in.data(), in.size(), 1, 1);
  Clock::time_point start = Clock::now();
  std::vector<Completion> out;
  ASSERT_TRUE(p.t[1]->progress(&out, start + 50ms).isOk());
  auto waited = Clock::now() - start;
  EXPECT_TRUE(out.empty());
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 2s);
}

TEST(VerbsFailure, ConnectTimesOutNamingThePeerThatNeverCame) {
  VerbsPair p;
  ASSERT_TRUE(p.create(0, smallWindow()).isOk());  // rank 1 never starts
  Connection* c = nullptr;
  Status st = p.t[0]->connect(1, Clock::now() + 50ms, &c);
  EXPECT_EQ(st.code(), ErrorCode::Timeout);
  EXPECT_TRUE(has(st, "peer 1 did not publish")) << st.message();
}

TEST(VerbsFailure, ConnectTimesOutWhenThePeerNeverConnectsBack) {
  VerbsPair p;
  ASSERT_TRUE(p.create(0, smallWindow()).isOk());
  ASSERT_TRUE(p.create(1, smallWindow()).isOk());  // but never calls connect
  Connection* c = nullptr;
  Status st = p.t[0]->connect(1, Clock::now() + 50ms, &c);
  EXPECT_EQ(st.code(), ErrorCode::Timeout);
  EXPECT_TRUE(has(st, "peer 1 did not bring its queue pair")) << st.message();
}

TEST(VerbsFailure, DifferentWindowsAreRefusedAtConnect) {
  VerbsPair p;
  VerbsOptions other = smallWindow();
  other.credits = 8;
  ASSERT_TRUE(p.create(0, smallWindow()).isOk());
  ASSERT_TRUE(p.create(1, other).isOk());
  Connection* c = nullptr;
  Status st = p.t[0]->connect(1, Clock::now() + 1s, &c);
  EXPECT_FALSE(st.isOk());
  EXPECT_TRUE(has(st, "peer 1 offers 8 landing slots")) << st.message();
}

TEST(VerbsFailure, AbortFromAnotherThreadEndsAWaitAndFailsThePeerToo) {
  VerbsPair p;
  p.start();
  std::vector<uint8_t> in0(10), in1(10);
  p.c[0]->postRecv(in0.data(), in0.size(), 1, 1);
  p.c[1]->postRecv(in1.data(), in1.size(), 1, 1);
  std::thread aborter([&] {
    std::this_thread::sleep_for(20ms);
    p.t[0]->abort("rank 0 gave up (test)");
  });
  Clock::time_point start = Clock::now();
  std::vector<Completion> out;
  Status st = p.t[0]->progress(&out, start + 10s);
  aborter.join();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(st.code(), ErrorCode::PeerLost);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(has(out[0].status, "rank 0 gave up (test)")) << out[0].status.message();
  ASSERT_TRUE(p.drive({}, {1}));
  EXPECT_EQ(p.done[1][1].code(), ErrorCode::PeerLost);
  EXPECT_TRUE(has(p.done[1][1], "peer 0 (verbs) aborted")) << p.done[1][1].message();
  Connection* c = nullptr;
  EXPECT_EQ(p.t[0]->connect(1, Clock::now() + 1s, &c).code(), ErrorCode::PeerLost);
}

// This machine has no RDMA device: the real transport must say so, and COLL_TRANSPORT=verbs
// must fail with that reason instead of falling back. Skips where a device exists.
TEST(VerbsFailure, NoDeviceMeansUnsupportedWithTheProbesReason) {
  DeviceChoice d;
  if (findDevice(&d).isOk()) GTEST_SKIP() << "an RDMA device is present: " << d.name;
  MemoryStore store;
  MemoryStore::Client client(&store);
  PeerDirectory dir{0, 2, "secret", "test/", &client, "localhost"};
  std::unique_ptr<Transport> t;
  Status st = createTransport(Config{}, dir, &t);
  EXPECT_EQ(st.code(), ErrorCode::Unsupported);
  EXPECT_TRUE(has(st, "verbs: no RDMA device")) << st.message();
  Config forced;
  forced.transport = "verbs";
  bootstrap::HostGrouping hosts;
  hosts.host_of_rank = {"a", "b"};
  hosts.num_hosts = 2;
  TransportSet set;
  st = createTransports(forced, dir, hosts, &set);
  EXPECT_EQ(st.code(), ErrorCode::Unsupported);
  EXPECT_TRUE(has(st, "COLL_TRANSPORT=verbs: verbs: no RDMA device")) << st.message();
}

}  // namespace
}  // namespace coll::transport::verbs::testing
