// The elastic pipeline's formation (src/trainer/elastic_formation.h): whole replicas are kept
// with their stages, the rest are cut into new replicas in member order, the few left over sit
// out, and the step to resume from is the lowest a kept rank has applied.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "trainer/elastic_formation.h"

namespace coll::trainer {
namespace {

constexpr ElasticRole kNew{};  // joined, or sat out: no replica, no state

void expectPlaced(const ElasticFormation& f, size_t rank, int replica, int stage, bool keeps) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  EXPECT_EQ(f.placement[rank].replica, replica);
  EXPECT_EQ(f.placement[rank].stage, stage);
  EXPECT_EQ(f.placement[rank].keeps_state, keeps);
}

std::string errorOf(const std::vector<ElasticRole>& roles, int stages) {
  try {
    planElasticFormation(roles, stages);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ElasticFormation, AtTheStartRanksFormReplicasInOrder) {
  ElasticFormation f = planElasticFormation({kNew, kNew, kNew, kNew, kNew, kNew, kNew}, 3);
  EXPECT_EQ(f.replicas, 2);
  EXPECT_EQ(f.kept, 0);
  EXPECT_EQ(f.resume_step, 0);
  for (size_t r = 0; r < 6; ++r) expectPlaced(f, r, static_cast<int>(r / 3), static_cast<int>(r % 3), false);
  expectPlaced(f, 6, -1, -1, false);
  EXPECT_EQ(describeFormation(f), "2 replica(s) (0 kept, 2 new), 1 sitting out, resuming at step 0");
}

TEST(ElasticFormation, AfterAFaultTheWholeReplicaGoesOnAndTheBrokenOnesSurvivorSitsOut) {
  // Rank 3 (replica 1, stage 1) died; stage 1 of replica 0 finished the step before it noticed.
  ElasticFormation f = planElasticFormation({{0, 0, 20}, {0, 1, 21}, {1, 0, 20}}, 2);
  EXPECT_EQ(f.replicas, 1);
  EXPECT_EQ(f.kept, 1);
  EXPECT_EQ(f.resume_step, 20);
  expectPlaced(f, 0, 0, 0, true);
  expectPlaced(f, 1, 0, 1, true);
  expectPlaced(f, 2, -1, -1, false);
}

TEST(ElasticFormation, JoinersFormANewReplicaAfterTheKeptOnes) {
  ElasticFormation f = planElasticFormation({{0, 0, 25}, {0, 1, 25}, kNew, {4, 0, 19}}, 2);
  EXPECT_EQ(f.replicas, 2);
  EXPECT_EQ(f.kept, 1);
  EXPECT_EQ(f.resume_step, 25);
  expectPlaced(f, 2, 1, 0, false);
  expectPlaced(f, 3, 1, 1, false);  // a broken replica's survivor: its old state is not used
}

TEST(ElasticFormation, KeptReplicasKeepTheirStagesAndOrderWhateverTheirRanks) {
  ElasticFormation f = planElasticFormation({{1, 1, 7}, {1, 0, 7}, {0, 1, 7}, {0, 0, 7}, kNew}, 2);
  EXPECT_EQ(f.replicas, 2);
  EXPECT_EQ(f.kept, 2);
  expectPlaced(f, 0, 1, 1, true);
  expectPlaced(f, 1, 1, 0, true);
  expectPlaced(f, 2, 0, 1, true);
  expectPlaced(f, 3, 0, 0, true);
  expectPlaced(f, 4, -1, -1, false);
}

TEST(ElasticFormation, AReplicaWithAMemberThatHoldsNoStateIsNotKept) {
  // Rank 1 was placed in replica 0 but the fault came before it loaded its state.
  ElasticFormation f = planElasticFormation({{0, 0, 3}, {0, 1, -1}, {1, 0, 3}, {1, 1, 3}}, 2);
  EXPECT_EQ(f.kept, 1);
  expectPlaced(f, 2, 0, 0, true);
  expectPlaced(f, 3, 0, 1, true);
  expectPlaced(f, 0, 1, 0, false);
  expectPlaced(f, 1, 1, 1, false);
}

TEST(ElasticFormation, RefusalsSayWhy) {
  EXPECT_NE(errorOf({{0, 0, 9}, {1, 1, 9}}, 2).find("every replica lost a stage"), std::string::npos);
  EXPECT_NE(errorOf({{0, 0, 9}, {0, 1, 11}}, 2).find("more than one step apart"), std::string::npos);
  EXPECT_NE(errorOf({kNew}, 2).find("fewer than the 2 stages"), std::string::npos);
  EXPECT_NE(errorOf({kNew}, 0).find("at least 1"), std::string::npos);
}

}  // namespace
}  // namespace coll::trainer
