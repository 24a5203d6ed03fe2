// The ledger's pieces without processes: fingerprints, snapshots through their wire form, the
// sentence a stalled op's error carries, and COLL_CHECK's comparison of calls.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "comm/call_check.h"
#include "comm/ledger.h"
#include "comm/stall_report.h"

namespace coll {
namespace {

OpRequest call(OpKind kind, size_t count, DataType type = DataType::f32, int root = -1) {
  OpRequest r;
  r.kind = kind;
  r.count = count;
  r.type = type;
  r.root = root;
  return r;
}

LedgerEntry entry(OpKind kind, uint64_t sequence, uint64_t collective, const std::string& algorithm = "ring") {
  return {sequence, collective, OpFingerprint::of(call(kind, 1000, DataType::f32, kind == OpKind::broadcast || kind == OpKind::reduce ? 0 : -1), algorithm)};
}

TEST(Fingerprint, FieldsThatDoNotApplyAreIgnored) {
  OpRequest a = call(OpKind::allgather, 10), b = a;
  b.op = ReduceOp::max;  // all-gather does not reduce
  b.root = 3;            // nor has a root
  EXPECT_TRUE(OpFingerprint::of(a, "ring") == OpFingerprint::of(b, "ring"));
  EXPECT_FALSE(OpFingerprint::of(a, "ring") == OpFingerprint::of(a, "direct"));
  b = a;
  b.count = 11;
  EXPECT_FALSE(OpFingerprint::of(a, "ring") == OpFingerprint::of(b, "ring"));
}

TEST(Fingerprint, DescribesTheCall) {
  EXPECT_EQ(OpFingerprint::of(call(OpKind::allreduce, 1000), "direct").describe(), "allreduce(f32 x 1000, sum, direct)");
  EXPECT_EQ(OpFingerprint::of(call(OpKind::broadcast, 8, DataType::i64, 2), "chain").describe(),
            "broadcast(i64 x 8, root 2, chain)");
  EXPECT_EQ(OpFingerprint::of(call(OpKind::send, 4, DataType::u8, 1), "").describe(), "send(u8 x 4, peer 1)");
}

TEST(Snapshot, SurvivesItsWireForm) {
  Ledger ledger(5);
  ledger.issued(43);
  ledger.started(entry(OpKind::allreduce, 41, 41));
  ledger.completed(true);
  ledger.started(entry(OpKind::broadcast, 42, 42));
  ledger.failed("broadcast #42: peer 9 closed the connection");
  auto s = LedgerSnapshot::decode(ledger.snapshot().encode());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rank, 5);
  EXPECT_EQ(s->collectives_issued, 43u);
  EXPECT_EQ(s->collectives_started, 43u);
  EXPECT_EQ(s->collectives_completed, 42u);
  EXPECT_TRUE(s->busy && s->has_last && s->failed);
  EXPECT_EQ(s->current.label(), "broadcast #42");
  EXPECT_EQ(s->last.label(), "allreduce #41");
  EXPECT_EQ(s->error, "broadcast #42: peer 9 closed the connection");
  EXPECT_FALSE(LedgerSnapshot::decode("garbage").has_value());
}

TEST(Snapshot, RanRecordsAStartAndACompletionAtOnce) {
  Ledger ledger(0);
  ledger.ran(entry(OpKind::allreduce, 7, 7, "board"), true);
  LedgerSnapshot s = ledger.snapshot();
  EXPECT_FALSE(s.busy);
  EXPECT_TRUE(s.has_last);
  EXPECT_EQ(s.collectives_started, 8u);
  EXPECT_EQ(s.collectives_completed, 8u);
  EXPECT_EQ(s.current.label(), "allreduce #7");
  EXPECT_EQ(s.last.label(), "allreduce #7");
  ledger.ran(entry(OpKind::allreduce, 8, 8, "board"), false);  // a failed op: started, not completed
  s = ledger.snapshot();
  EXPECT_EQ(s.collectives_started, 9u);
  EXPECT_EQ(s.collectives_completed, 8u);
}

// The ops' runner publishes without a lock (a sequence lock); a responder's snapshot taken
// meanwhile must still be one moment's state, never half of one op and half of another.
TEST(Snapshot, IsNeverTornWhileOpsRun) {
  Ledger ledger(0);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
      OpRequest r = call(OpKind::allreduce, i);  // the count says which op wrote the entry
      if (i % 2) {
        ledger.started({i, i, OpFingerprint::of(r, "ring")});
        ledger.completed(true);
      } else {
        ledger.ran({i, i, OpFingerprint::of(r, "board")}, true);
      }
    }
  });
  uint64_t last_started = 0;
  for (int k = 0; k < 20000; ++k) {
    LedgerSnapshot s = ledger.snapshot();
    ASSERT_EQ(s.current.fingerprint.count, s.current.sequence) << "snapshot " << k;
    ASSERT_EQ(s.last.fingerprint.count, s.last.sequence) << "snapshot " << k;
    ASSERT_LE(s.collectives_completed, s.collectives_started) << "snapshot " << k;
    ASSERT_GE(s.collectives_started, last_started) << "snapshot " << k;  // never goes back
    if (s.has_last && !s.busy) {
      ASSERT_EQ(s.collectives_completed, s.last.collective + 1) << "snapshot " << k;
    }
    last_started = s.collectives_started;
  }
  stop = true;
  writer.join();
}

TEST(RankList, ReadsLikeEnglish) {
  EXPECT_EQ(rankList({5}), "5");
  EXPECT_EQ(rankList({5, 9}), "5 and 9");
  EXPECT_EQ(rankList({0, 1, 2, 3, 4, 6, 8}), "0-4, 6 and 8");
}

// Rank 0 timed out in allreduce #1042: rank 1 is in it too, rank 2 is still in broadcast
// #1041, rank 3 never called it, rank 4 is stopped, rank 5 called a reduce instead.
TEST(StallReport, NamesWhoNeverArrivedAndWhereTheyAre) {
  LedgerEntry mine = entry(OpKind::allreduce, 1042, 1042);
  LedgerAnswers a;
  a.of_rank.resize(6);
  auto snap = [&](int r, uint64_t issued, uint64_t started, uint64_t completed, bool busy, LedgerEntry current) {
    LedgerSnapshot s;
    s.rank = r;
    s.collectives_issued = issued;
    s.collectives_started = started;
    s.collectives_completed = completed;
    s.busy = busy;
    s.current = current;
    s.has_last = true;
    s.last = entry(OpKind::allreduce, 1040, 1040);
    a.of_rank[static_cast<size_t>(r)] = s;
  };
  snap(0, 1043, 1043, 1042, true, mine);
  snap(1, 1043, 1043, 1042, true, mine);
  snap(2, 1043, 1042, 1041, true, entry(OpKind::broadcast, 1041, 1041));
  snap(3, 1042, 1042, 1042, false, entry(OpKind::allreduce, 1041, 1041));
  snap(5, 1043, 1043, 1042, true, entry(OpKind::reduce, 1042, 1042));
  std::string text = describeStall(mine, 0, a, {"h0/x", "h0/x", "h3/x", "h3/x", "h4/x", "h5/x"});
  EXPECT_NE(text.find("ranks 2 and 3 (host h3) have not started it: rank 2 is still in broadcast #1041, rank 3 has "
                      "not called it (last ran allreduce #1040)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 4 (host h4) did not answer (stopped or dead)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 5 called reduce(f32 x 1000, sum, root 0, ring)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 is in it too"), std::string::npos) << text;
}

TEST(StallReport, SaysWhenTheStoreCouldNotBeAsked) {
  LedgerAnswers a;
  a.of_rank.resize(3);
  a.store_problem = "store reply: no progress before the deadline";
  std::string text = describeStall(entry(OpKind::allreduce, 7, 7), 0, a, {});
  EXPECT_NE(text.find("could not ask the other ranks: store reply"), std::string::npos) << text;
  EXPECT_EQ(text.find("did not answer"), std::string::npos) << text;
}

TEST(CallCheck, AgreementPassesDisagreementNamesEveryCall) {
  OpFingerprint ar = OpFingerprint::of(call(OpKind::allreduce, 1000), "direct");
  OpFingerprint bc = OpFingerprint::of(call(OpKind::broadcast, 1000, DataType::f32, 0), "direct");
  EXPECT_TRUE(compareCalls({ar, ar, ar}, 1).isOk());
  Status st = compareCalls({bc, ar, ar, bc}, 2);
  EXPECT_EQ(st.code(), ErrorCode::Mismatch);
  EXPECT_NE(st.message().find("ranks 0 and 3 called broadcast(f32 x 1000, root 0, direct); ranks 1 and 2 called "
                              "allreduce(f32 x 1000, sum, direct)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace coll
