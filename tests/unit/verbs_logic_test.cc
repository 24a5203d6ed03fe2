// The verbs transport's pure logic (no RDMA device needed): queue-pair state machine,
// registration cache, credits and chunking. The device probe runs too and skips, saying why,
// where there is no device.
#include <gtest/gtest.h>

#include <map>

#include "transport/verbs/device.h"
#include "transport/verbs/flow_control.h"
#include "transport/verbs/qp_state.h"
#include "transport/verbs/registration_cache.h"

namespace coll::transport::verbs {
namespace {

TEST(QpState, WalksResetInitRtrRts) {
  QpStateMachine qp(3);
  QpState steps[3];
  ASSERT_EQ(qp.stepsToReady(steps), 3);
  for (QpState s : {QpState::init, QpState::rtr, QpState::rts}) ASSERT_TRUE(qp.transition(s).isOk()) << toString(s);
  EXPECT_EQ(qp.state(), QpState::rts);
  EXPECT_EQ(qp.stepsToReady(steps), 0);
}

TEST(QpState, RefusesSkippingAStateAndNamesPeerAndStates) {
  QpStateMachine qp(5);
  Status st = qp.transition(QpState::rts);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("peer 5"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("RESET to RTS"), std::string::npos) << st.message();
  EXPECT_EQ(qp.state(), QpState::reset);
  ASSERT_TRUE(qp.transition(QpState::init).isOk());
  EXPECT_FALSE(qp.transition(QpState::rts).isOk());
  EXPECT_FALSE(qp.transition(QpState::init).isOk());
}

TEST(QpState, ErrorFromAnywhereThenResetToReuse) {
  QpStateMachine qp(0);
  ASSERT_TRUE(qp.transition(QpState::init).isOk());
  ASSERT_TRUE(qp.transition(QpState::error).isOk());
  QpState steps[3];
  EXPECT_EQ(qp.stepsToReady(steps), 0);
  EXPECT_FALSE(qp.transition(QpState::rtr).isOk());
  ASSERT_TRUE(qp.transition(QpState::reset).isOk());
  EXPECT_EQ(qp.stepsToReady(steps), 3);
}

TEST(QpState, EachStepSetsTheAttributesRcNeeds) {
  EXPECT_EQ(requiredAttributes(QpState::reset, QpState::init), kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags);
  uint32_t rtr = requiredAttributes(QpState::init, QpState::rtr);
  for (uint32_t a : {kAttrDestQpn, kAttrRqPsn, kAttrPathMtu, kAttrAddressVector}) EXPECT_TRUE(rtr & a);
  uint32_t rts = requiredAttributes(QpState::rtr, QpState::rts);
  for (uint32_t a : {kAttrSqPsn, kAttrTimeout, kAttrRetryCount, kAttrRnrRetry}) EXPECT_TRUE(rts & a);
  EXPECT_EQ(requiredAttributes(QpState::reset, QpState::rtr), 0u);
}

// A fake NIC: records registrations, hands out keys, counts deregistrations.
struct FakeNic {
  std::map<uint32_t, std::pair<uintptr_t, size_t>> live;
  uint32_t next_key = 1;
  int registered = 0, deregistered = 0;
  RegistrationCache make(size_t capacity) {
    return RegistrationCache(
        capacity, 4096,
        [this](uintptr_t b, size_t n, Registration* r) {
          r->lkey = r->rkey = next_key++;
          live[r->lkey] = {b, n};
          ++registered;
          return Status::ok();
        },
        [this](const Registration& r) {
          live.erase(r.lkey);
          ++deregistered;
        });
  }
};

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(RegistrationCache, HitsInsideARegisteredRangePageAligned) {
  FakeNic nic;
  auto cache = nic.make(1 << 30);
  const Registration* r = nullptr;
  ASSERT_TRUE(cache.acquire(at(0x10010), 3 * 4096, &r).isOk());
  EXPECT_EQ(r->begin, 0x10000u);
  EXPECT_EQ(r->end, 0x14000u);
  const Registration* again = nullptr;
  ASSERT_TRUE(cache.acquire(at(0x12000), 100, &again).isOk());
  EXPECT_EQ(again, r);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(nic.registered, 1);
  cache.release(r);
  cache.release(again);
  EXPECT_EQ(nic.deregistered, 0);  // cached, not dropped
}

TEST(RegistrationCache, OverlapIsRegisteredAsTheUnion) {
  FakeNic nic;
  auto cache = nic.make(1 << 30);
  const Registration *a, *b, *c;
  ASSERT_TRUE(cache.acquire(at(0x10000), 4096, &a).isOk());
  ASSERT_TRUE(cache.acquire(at(0x20000), 4096, &b).isOk());
  cache.release(a);
  ASSERT_TRUE(cache.acquire(at(0x10800), 0x10000, &c).isOk());  // spans a, reaches b
  EXPECT_EQ(c->begin, 0x10000u);
  EXPECT_EQ(c->end, 0x21000u);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(nic.deregistered, 1);  // a (unused) went at once
  EXPECT_EQ(nic.live.size(), 2u);  // b is still in use: it stays registered until released
  cache.release(b);
  EXPECT_EQ(nic.live.size(), 1u);
  cache.release(c);
}

TEST(RegistrationCache, EvictsLeastRecentlyUsedUnusedEntries) {
  FakeNic nic;
  auto cache = nic.make(3 * 4096);
  const Registration* r[4];
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cache.acquire(at(0x100000 * (i + 1)), 4096, &r[i]).isOk());
    cache.release(r[i]);
  }
  const Registration* hit;
  ASSERT_TRUE(cache.acquire(at(0x100000), 10, &hit).isOk());  // entry 0 is now the newest
  cache.release(hit);
  ASSERT_TRUE(cache.acquire(at(0x400000), 4096, &r[3]).isOk());
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(nic.deregistered, 1);
  const Registration* probe;
  uint64_t misses = cache.misses();
  ASSERT_TRUE(cache.acquire(at(0x100000), 10, &probe).isOk());
  EXPECT_EQ(cache.misses(), misses);  // 0 survived; 1 (least recently used) went
  cache.release(probe);
  cache.release(r[3]);
}

TEST(RegistrationCache, InUseEntriesAreNeverEvictedAndInvalidateDefersThem) {
  FakeNic nic;
  auto cache = nic.make(4096);
  const Registration *a, *b;
  ASSERT_TRUE(cache.acquire(at(0x10000), 4096, &a).isOk());
  ASSERT_TRUE(cache.acquire(at(0x90000), 4096, &b).isOk());
  EXPECT_EQ(nic.deregistered, 0);  // over capacity, but both in use
  cache.invalidate(at(0x10000), 4096);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(nic.deregistered, 0);
  cache.release(a);
  EXPECT_EQ(nic.deregistered, 1);
  cache.release(b);
}

TEST(RegistrationCache, FailedRegistrationIsReported) {
  RegistrationCache cache(1 << 20, 4096, [](uintptr_t, size_t, Registration*) { return transportError("ibv_reg_mr: ENOMEM"); },
                          [](const Registration&) {});
  const Registration* r = nullptr;
  Status st = cache.acquire(at(0x1000), 10, &r);
  EXPECT_FALSE(st.isOk());
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(FlowControl, ImmediateDataRoundTrips) {
  for (ImmData d : {ImmData{0, 0, false}, ImmData{65535, 32767, true}, ImmData{42, 7, true}}) {
    ImmData e = ImmData::decode(d.encode());
    EXPECT_EQ(e.message, d.message);
    EXPECT_EQ(e.slot, d.slot);
    EXPECT_EQ(e.last, d.last);
  }
}

TEST(FlowControl, ChunksStopWithoutCreditsAndResumeWhenReturned) {
  ChunkedSender s(2, 1000);
  s.enqueue(7, 2500);
  s.enqueue(8, 0);
  auto c0 = s.next(), c1 = s.next();
  ASSERT_TRUE(c0 && c1);
  EXPECT_EQ(c0->offset, 0u);
  EXPECT_EQ(c1->offset, 1000u);
  EXPECT_EQ(c1->slot, 1u);
  EXPECT_FALSE(s.next());  // window of 2 used up
  ASSERT_TRUE(s.onCredits(1, 3).isOk());
  auto c2 = s.next();
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->bytes, 500u);
  EXPECT_TRUE(c2->last);
  EXPECT_EQ(c2->slot, 0u);  // slots in ring order
  ASSERT_TRUE(s.onCredits(2, 3).isOk());
  auto empty = s.next();
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->message, 8u);
  EXPECT_EQ(empty->bytes, 0u);
  EXPECT_TRUE(empty->last);
  EXPECT_FALSE(s.next());
}

TEST(FlowControl, TooManyCreditsReturnedIsAProtocolError) {
  CreditWindow w(4);
  ASSERT_TRUE(w.tryConsume());
  Status st = w.grant(2, 6);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("peer 6"), std::string::npos);
  EXPECT_TRUE(w.grant(1, 6).isOk());
  EXPECT_EQ(w.available(), 4u);
}

TEST(FlowControl, CreditsGoBackInBatchesOfHalfTheWindow) {
  CreditReturner r(8);
  for (int i = 0; i < 3; ++i) r.slotFreed();
  EXPECT_EQ(r.take(), 0u);
  r.slotFreed();
  EXPECT_EQ(r.take(), 4u);
  r.slotFreed();
  EXPECT_EQ(r.take(true), 1u);  // forced: e.g. the receiver is about to wait
  EXPECT_EQ(r.take(true), 0u);
}

TEST(VerbsDevice, ProbeReportsWhyThereIsNone) {
  DeviceChoice d;
  Status st = findDevice(&d);
  if (!st.isOk()) {
    EXPECT_EQ(st.code(), ErrorCode::Unsupported);
    GTEST_SKIP() << st.message();
  }
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.port, 0);
}

}  // namespace
}  // namespace coll::transport::verbs
