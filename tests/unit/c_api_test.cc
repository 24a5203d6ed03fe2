// The C API's argument checking and result codes. Most checks need no peers; the rest run on
// a real one-rank communicator (collGetUniqueId + collCommInitRank(..., 1, id, 0)), which has
// its own store and socket transport but nobody to talk to.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "coll/coll.h"

namespace {

std::string lastError() { return collGetLastError(); }

TEST(CApi, ErrorStringsForEveryCode) {
  std::set<std::string> seen;
  for (int r = collSuccess; r <= collInProgress; ++r) {
    const char* s = collGetErrorString(static_cast<collResult_t>(r));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 3u) << r;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(collInProgress + 1)) << "two codes share a description";
  EXPECT_NE(std::string(collGetErrorString(collTimeout)).find("timeout"), std::string::npos);
  EXPECT_NE(std::string(collGetErrorString(collPeerLost)).find("peer"), std::string::npos);
  EXPECT_STREQ(collGetErrorString(static_cast<collResult_t>(99)), "unknown result code");
  EXPECT_STREQ(collGetErrorString(static_cast<collResult_t>(-1)), "unknown result code");
}

TEST(CApi, InitRankRefusesBadArguments) {
  collUniqueId id;
  std::memset(&id, 0, sizeof id);
  collComm_t comm = nullptr;
  EXPECT_EQ(collCommInitRank(nullptr, 1, id, 0), collInvalidArgument);
  EXPECT_NE(lastError().find("null"), std::string::npos) << lastError();
  EXPECT_EQ(collCommInitRank(&comm, 2, id, 2), collInvalidArgument);
  EXPECT_NE(lastError().find("rank 2 of 2"), std::string::npos) << lastError();
  EXPECT_EQ(collCommInitRank(&comm, 2, id, -1), collInvalidArgument);
  EXPECT_EQ(collCommInitRank(&comm, 0, id, 0), collInvalidArgument);
  // A valid position but an id collGetUniqueId did not make.
  EXPECT_EQ(collCommInitRank(&comm, 1, id, 0), collInvalidArgument);
  EXPECT_NE(lastError().find("unique id"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr);
}

TEST(CApi, NullHandlesAndPointers) {
  int x = 0;
  EXPECT_EQ(collGetUniqueId(nullptr), collInvalidArgument);
  EXPECT_EQ(collCommInitFromEnv(nullptr), collInvalidArgument);
  EXPECT_EQ(collCommDestroy(nullptr), collInvalidArgument);
  EXPECT_EQ(collCommAbort(nullptr), collInvalidArgument);
  EXPECT_EQ(collCommCount(nullptr, &x), collInvalidArgument);
  EXPECT_EQ(collCommUserRank(nullptr, &x), collInvalidArgument);
  collResult_t async;
  EXPECT_EQ(collCommGetAsyncError(nullptr, &async), collInvalidArgument);
  float f = 1;
  EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat32, collSum, nullptr, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("null communicator"), std::string::npos) << lastError();
  EXPECT_EQ(collBroadcast(&f, &f, 1, collFloat32, 0, nullptr, nullptr), collInvalidArgument);
  collRequest_t req = nullptr;
  EXPECT_EQ(collAllReduceAsync(&f, &f, 1, collFloat32, collSum, nullptr, &req), collInvalidArgument);
  EXPECT_EQ(collRequestTest(nullptr), collInvalidArgument);
  EXPECT_EQ(collRequestWait(nullptr, 0), collInvalidArgument);
  EXPECT_EQ(collRequestFree(nullptr), collSuccess);  // like free(NULL)
}

TEST(CApi, InitFromEnvWithoutALauncherExplains) {
  // ctest runs us without a launcher's variables; if some are set, this check means nothing.
  for (const char* v : {"COLL_STORE_ADDR", "RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) GTEST_SKIP() << v << " is set in this environment";
  collComm_t comm = nullptr;
  EXPECT_EQ(collCommInitFromEnv(&comm), collInvalidArgument);
  EXPECT_NE(lastError().find("collrun"), std::string::npos) << lastError();
}

class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    collUniqueId id;
    ASSERT_EQ(collGetUniqueId(&id), collSuccess) << lastError();
    ASSERT_EQ(collCommInitRank(&comm_, 1, id, 0), collSuccess) << lastError();
    ASSERT_NE(comm_, nullptr);
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(collCommDestroy(comm_), collSuccess) << lastError();
    }
  }
  collComm_t comm_ = nullptr;
};

TEST_F(OneRank, CountRankAndNoAsyncError) {
  int count = -1, rank = -1;
  ASSERT_EQ(collCommCount(comm_, &count), collSuccess);
  ASSERT_EQ(collCommUserRank(comm_, &rank), collSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(collCommCount(comm_, nullptr), collInvalidArgument);
  EXPECT_EQ(collCommUserRank(comm_, nullptr), collInvalidArgument);
  collResult_t async = collInternalError;
  ASSERT_EQ(collCommGetAsyncError(comm_, &async), collSuccess);
  EXPECT_EQ(async, collSuccess);
  EXPECT_EQ(collCommGetAsyncError(comm_, nullptr), collInvalidArgument);
}

TEST_F(OneRank, ShrinkMakesAWorkingCommunicator) {
  collComm_t shrunk = nullptr;
  int self = 0;
  EXPECT_EQ(collCommShrink(comm_, &self, 1, &shrunk), collInvalidArgument) << "a rank cannot exclude itself";
  EXPECT_NE(std::string(collGetLastError()).find("excludes itself"), std::string::npos) << collGetLastError();
  EXPECT_EQ(collCommShrink(comm_, nullptr, 1, &shrunk), collInvalidArgument);
  EXPECT_EQ(collCommShrink(comm_, nullptr, 0, nullptr), collInvalidArgument);
  ASSERT_EQ(collCommShrink(comm_, nullptr, 0, &shrunk), collSuccess) << collGetLastError();
  int count = 0;
  EXPECT_EQ(collCommCount(shrunk, &count), collSuccess);
  EXPECT_EQ(count, 1);
  float x = 3;
  EXPECT_EQ(collAllReduce(&x, &x, 1, collFloat32, collSum, shrunk, nullptr), collSuccess) << collGetLastError();
  EXPECT_EQ(x, 3);
  EXPECT_EQ(collCommDestroy(shrunk), collSuccess);
}

TEST_F(OneRank, FailedRanksAgreeRevokeAndShrinkSurvivors) {
  int ranks[4] = {-1, -1, -1, -1}, count = -1;
  ASSERT_EQ(collCommFailedRanks(comm_, ranks, 4, &count), collSuccess) << collGetLastError();
  EXPECT_EQ(count, 0);
  EXPECT_EQ(collCommFailedRanks(comm_, ranks, 4, nullptr), collInvalidArgument);
  EXPECT_EQ(collCommFailedRanks(comm_, nullptr, 2, &count), collInvalidArgument);
  uint64_t value = 0xF0F0;
  ASSERT_EQ(collCommAgree(comm_, &value, ranks, 4, &count), collSuccess) << collGetLastError();
  EXPECT_EQ(value, 0xF0F0u);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(collCommAgree(comm_, nullptr, ranks, 4, &count), collInvalidArgument);
  ASSERT_EQ(collCommRevoke(comm_), collSuccess) << collGetLastError();
  float x = 3;
  EXPECT_EQ(collAllReduce(&x, &x, 1, collFloat32, collSum, comm_, nullptr), collPeerLost) << "revoked";
  EXPECT_NE(std::string(collGetLastError()).find("revoked by rank 0"), std::string::npos) << collGetLastError();
  collComm_t survivors = nullptr;
  EXPECT_EQ(collCommShrinkSurvivors(comm_, nullptr), collInvalidArgument);
  ASSERT_EQ(collCommShrinkSurvivors(comm_, &survivors), collSuccess) << collGetLastError();
  EXPECT_EQ(collAllReduce(&x, &x, 1, collFloat32, collSum, survivors, nullptr), collSuccess) << collGetLastError();
  EXPECT_EQ(x, 3);
  collComm_t grown = nullptr;
  EXPECT_EQ(collCommGrow(comm_, &grown), collInvalidArgument) << "a revoked communicator cannot grow";
  EXPECT_EQ(collCommGrow(survivors, nullptr), collInvalidArgument);
  ASSERT_EQ(collCommGrow(survivors, &grown), collSuccess) << collGetLastError();  // nobody waits: the members
  EXPECT_EQ(collAllReduce(&x, &x, 1, collFloat32, collSum, grown, nullptr), collSuccess) << collGetLastError();
  EXPECT_EQ(collCommJoin(nullptr, "127.0.0.1:1", nullptr, nullptr), collInvalidArgument);
  EXPECT_EQ(collCommJoin(&grown, nullptr, nullptr, nullptr), collInvalidArgument);
  EXPECT_EQ(collCommDestroy(grown), collSuccess);
  EXPECT_EQ(collCommDestroy(survivors), collSuccess);
}

TEST_F(OneRank, AllReduceAndBroadcast) {
  std::vector<int32_t> in = {1, -2, 3, 7}, out(4, 0);
  ASSERT_EQ(collAllReduce(in.data(), out.data(), 4, collInt32, collSum, comm_, nullptr), collSuccess) << lastError();
  EXPECT_EQ(out, in);
  ASSERT_EQ(collAllReduce(in.data(), out.data(), 4, collInt32, collAvg, comm_, nullptr), collSuccess) << lastError();
  EXPECT_EQ(out, in);
  std::vector<double> d = {0.5, 1.5};
  ASSERT_EQ(collAllReduce(d.data(), d.data(), 2, collDouble, collProd, comm_, nullptr), collSuccess);  // in place
  EXPECT_EQ(d, (std::vector<double>{0.5, 1.5}));
  std::vector<uint8_t> b = {9, 8, 7}, bo(3, 0);
  ASSERT_EQ(collBroadcast(b.data(), bo.data(), 3, collUint8, 0, comm_, nullptr), collSuccess) << lastError();
  EXPECT_EQ(bo, b);
  // count 0 needs no buffers.
  EXPECT_EQ(collAllReduce(nullptr, nullptr, 0, collFloat, collSum, comm_, nullptr), collSuccess) << lastError();
  EXPECT_EQ(collBroadcast(nullptr, nullptr, 0, collFloat, 0, comm_, nullptr), collSuccess) << lastError();
}

TEST_F(OneRank, NullBufferWithCountIsRefused) {
  float f = 0;
  EXPECT_EQ(collAllReduce(nullptr, &f, 1, collFloat, collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("null send buffer"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("allreduce"), std::string::npos) << "should name the op: " << lastError();
  EXPECT_EQ(collAllReduce(&f, nullptr, 1, collFloat, collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("null receive buffer"), std::string::npos) << lastError();
  EXPECT_EQ(collBroadcast(&f, nullptr, 1, collFloat, 0, comm_, nullptr), collInvalidArgument);
  EXPECT_EQ(collBroadcast(nullptr, &f, 1, collFloat, 0, comm_, nullptr), collInvalidArgument)
      << "the root's send buffer is read";
  // A refused call leaves the communicator healthy.
  collResult_t async;
  ASSERT_EQ(collCommGetAsyncError(comm_, &async), collSuccess);
  EXPECT_EQ(async, collSuccess);
  EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm_, nullptr), collSuccess) << lastError();
}

TEST_F(OneRank, UnknownTypeAndOpAreRefused) {
  float f[2] = {1, 2};
  EXPECT_EQ(collAllReduce(f, f, 2, static_cast<collDataType_t>(99), collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("data type"), std::string::npos) << lastError();
  EXPECT_EQ(collAllReduce(f, f, 2, static_cast<collDataType_t>(-1), collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_EQ(collAllReduce(f, f, 2, collFloat, static_cast<collRedOp_t>(99), comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("op"), std::string::npos) << lastError();
  EXPECT_EQ(collBroadcast(f, f, 2, static_cast<collDataType_t>(10), 0, comm_, nullptr), collInvalidArgument);
}

TEST_F(OneRank, BroadcastRootOutOfRange) {
  float f = 1;
  EXPECT_EQ(collBroadcast(&f, &f, 1, collFloat, 1, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("root 1"), std::string::npos) << lastError();
  EXPECT_EQ(collBroadcast(&f, &f, 1, collFloat, -1, comm_, nullptr), collInvalidArgument);
  collRequest_t req = nullptr;
  EXPECT_EQ(collBroadcastAsync(&f, &f, 1, collFloat, 5, comm_, &req), collInvalidArgument);
  EXPECT_EQ(req, nullptr);
}

TEST_F(OneRank, PartiallyOverlappingBuffersAreRefused) {
  std::vector<float> buf(16, 1.0f);
  EXPECT_EQ(collAllReduce(buf.data(), buf.data() + 1, 8, collFloat, collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("overlap"), std::string::npos) << lastError();
  EXPECT_EQ(collAllReduce(buf.data() + 7, buf.data(), 8, collFloat, collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_EQ(collBroadcast(buf.data(), buf.data() + 4, 8, collFloat, 0, comm_, nullptr), collInvalidArgument);
  // Adjacent (touching, not overlapping) is fine, and so is exactly in-place.
  EXPECT_EQ(collAllReduce(buf.data(), buf.data() + 8, 8, collFloat, collSum, comm_, nullptr), collSuccess)
      << lastError();
  EXPECT_EQ(collAllReduce(buf.data(), buf.data(), 16, collFloat, collSum, comm_, nullptr), collSuccess) << lastError();
}

TEST_F(OneRank, HugeCountIsRefused) {
  float f = 0;
  EXPECT_EQ(collAllReduce(&f, &f, static_cast<size_t>(-1), collFloat, collSum, comm_, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("too large"), std::string::npos) << lastError();
}

TEST_F(OneRank, StreamsAreUnsupported) {
  float f = 1;
  int fake_stream;
  EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm_, &fake_stream), collUnsupported);
  EXPECT_NE(lastError().find("stream"), std::string::npos) << lastError();
  EXPECT_EQ(collBroadcast(&f, &f, 1, collFloat, 0, comm_, &fake_stream), collUnsupported);
}

TEST_F(OneRank, AsyncRequestWaitAndTest) {
  std::vector<int64_t> v(1000, 3);
  collRequest_t req = nullptr;
  ASSERT_EQ(collAllReduceAsync(v.data(), v.data(), v.size(), collInt64, collMax, comm_, &req), collSuccess)
      << lastError();
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(collRequestWait(req, 10'000), collSuccess) << lastError();
  EXPECT_EQ(collRequestTest(req), collSuccess);
  EXPECT_EQ(collRequestWait(req, -1), collSuccess);
  EXPECT_EQ(collRequestFree(req), collSuccess);
  for (int64_t x : v) EXPECT_EQ(x, 3);

  collRequest_t b = nullptr;
  std::vector<int64_t> out(1000, 0);
  ASSERT_EQ(collBroadcastAsync(v.data(), out.data(), v.size(), collInt64, 0, comm_, &b), collSuccess) << lastError();
  collResult_t r;
  for (int i = 0; i < 10'000 && (r = collRequestTest(b)) == collInProgress; ++i) collRequestWait(b, 1);
  EXPECT_EQ(r, collSuccess) << lastError();
  EXPECT_EQ(out, v);
  EXPECT_EQ(collRequestFree(b), collSuccess);

  EXPECT_EQ(collAllReduceAsync(v.data(), v.data(), v.size(), collInt64, collMax, comm_, nullptr), collInvalidArgument);
}

TEST(CApiLifetime, UseAfterDestroyIsRefused) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess) << lastError();
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess) << lastError();
  ASSERT_EQ(collCommDestroy(comm), collSuccess);
  float f = 1;
  EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm, nullptr), collInvalidArgument);
  EXPECT_NE(lastError().find("destroyed"), std::string::npos) << lastError();
  int n;
  EXPECT_EQ(collCommCount(comm, &n), collInvalidArgument);
  EXPECT_EQ(collCommDestroy(comm), collInvalidArgument) << "double destroy";
  EXPECT_EQ(collCommAbort(comm), collInvalidArgument);
}

TEST(CApiLifetime, AbortFailsNothingWhenIdleAndReturns) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess) << lastError();
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess) << lastError();
  float f = 2;
  ASSERT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm, nullptr), collSuccess) << lastError();
  EXPECT_EQ(collCommAbort(comm), collSuccess) << lastError();
  EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm, nullptr), collInvalidArgument);
}

}  // namespace
