// Bad input through the C API for every collective beyond all-reduce and broadcast (those are
// in c_api_test.cc): null buffers, unknown types and ops, roots and peers out of range,
// partial overlaps, and every entry point after destroy. Each is refused with
// collInvalidArgument and a message naming the op; the communicator stays usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coll/coll.h"

namespace {

std::string lastError() { return collGetLastError(); }

class CApiBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    collUniqueId id;
    ASSERT_EQ(collGetUniqueId(&id), collSuccess) << lastError();
    ASSERT_EQ(collCommInitRank(&comm_, 1, id, 0), collSuccess) << lastError();
  }
  void TearDown() override {
    float f = 1;  // every refusal left it usable
    EXPECT_EQ(collAllReduce(&f, &f, 1, collFloat, collSum, comm_, nullptr), collSuccess) << lastError();
    EXPECT_EQ(collCommDestroy(comm_), collSuccess) << lastError();
  }
  void expectRefused(collResult_t r, const char* op, const char* says) {
    EXPECT_EQ(r, collInvalidArgument) << op << ": " << lastError();
    EXPECT_NE(lastError().find(op), std::string::npos) << "does not name " << op << ": " << lastError();
    EXPECT_NE(lastError().find(says), std::string::npos) << "no '" << says << "' in: " << lastError();
  }
  collComm_t comm_ = nullptr;
};

const auto kBadType = static_cast<collDataType_t>(77);
const auto kBadOp = static_cast<collRedOp_t>(-3);

TEST_F(CApiBadInput, NullBuffers) {
  float f[4] = {};
  expectRefused(collReduce(nullptr, f, 4, collFloat, collSum, 0, comm_, nullptr), "reduce", "null send");
  expectRefused(collAllGather(f, nullptr, 4, collFloat, comm_, nullptr), "allgather", "null receive");
  expectRefused(collReduceScatter(nullptr, f, 4, collFloat, collSum, comm_, nullptr), "reducescatter", "null send");
  expectRefused(collAlltoAll(f, nullptr, 4, collFloat, comm_, nullptr), "alltoall", "null receive");
  expectRefused(collGather(nullptr, f, 4, collFloat, 0, comm_, nullptr), "gather", "null send");
  expectRefused(collScatter(f, nullptr, 4, collFloat, 0, comm_, nullptr), "scatter", "null receive");
}

TEST_F(CApiBadInput, UnknownTypesAndOps) {
  float f[4] = {}, g[4] = {};
  expectRefused(collReduce(f, g, 4, kBadType, collSum, 0, comm_, nullptr), "reduce", "unknown data type 77");
  expectRefused(collReduce(f, g, 4, collFloat, kBadOp, 0, comm_, nullptr), "reduce", "unknown reduction op -3");
  expectRefused(collReduceScatter(f, g, 4, collFloat, kBadOp, comm_, nullptr), "reducescatter", "unknown reduction op");
  expectRefused(collAllGather(f, g, 4, kBadType, comm_, nullptr), "allgather", "unknown data type");
  expectRefused(collSend(f, 4, kBadType, 0, comm_, nullptr), "send", "unknown data type");
}

TEST_F(CApiBadInput, RootsAndPeersOutOfRange) {
  float f[4] = {}, g[4] = {};
  expectRefused(collReduce(f, g, 4, collFloat, collSum, 1, comm_, nullptr), "reduce", "root 1 is out of range for 1");
  expectRefused(collGather(f, g, 4, collFloat, -2, comm_, nullptr), "gather", "root -2");
  expectRefused(collScatter(f, g, 4, collFloat, 9, comm_, nullptr), "scatter", "root 9");
  expectRefused(collSend(f, 4, collFloat, 3, comm_, nullptr), "send", "peer 3");
  expectRefused(collRecv(f, 4, collFloat, 0, comm_, nullptr), "recv", "oneself");
}

TEST_F(CApiBadInput, NegativeCountsAndOverlaps) {
  std::vector<float> b(32, 1.0f);
  expectRefused(collAllGather(b.data(), b.data() + 8, static_cast<size_t>(-1), collFloat, comm_, nullptr), "allgather",
                "too large");
  expectRefused(collReduce(b.data(), b.data() + 3, 8, collFloat, collSum, 0, comm_, nullptr), "reduce", "overlap");
  expectRefused(collAlltoAll(b.data(), b.data(), 8, collFloat, comm_, nullptr), "alltoall", "in-place");
}

TEST(CApiBadInputLifetime, EveryEntryPointAfterDestroyOrAbort) {
  for (bool abort : {false, true}) {
    collUniqueId id;
    ASSERT_EQ(collGetUniqueId(&id), collSuccess) << lastError();
    collComm_t c = nullptr;
    ASSERT_EQ(collCommInitRank(&c, 1, id, 0), collSuccess) << lastError();
    ASSERT_EQ(abort ? collCommAbort(c) : collCommDestroy(c), collSuccess) << lastError();
    float f[4] = {}, g[4] = {};
    collResult_t results[] = {
        collReduce(f, g, 4, collFloat, collSum, 0, c, nullptr), collAllGather(f, g, 1, collFloat, c, nullptr),
        collReduceScatter(f, g, 1, collFloat, collSum, c, nullptr), collAlltoAll(f, g, 1, collFloat, c, nullptr),
        collGather(f, g, 1, collFloat, 0, c, nullptr), collScatter(f, g, 1, collFloat, 0, c, nullptr),
        collSend(f, 1, collFloat, 0, c, nullptr), collRecv(f, 1, collFloat, 0, c, nullptr), collBarrier(c, nullptr)};
    for (collResult_t r : results) EXPECT_EQ(r, collInvalidArgument);
    EXPECT_NE(lastError().find("destroyed or aborted"), std::string::npos) << lastError();
  }
}

}  // namespace
