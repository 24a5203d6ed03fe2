// COLL_ALGO grammar and the selector's rules, without any ranks.
#include <gtest/gtest.h>

#include "topology/algo_override.h"
#include "topology/selector.h"

namespace coll::topology {
namespace {

using algo::Collective;

TEST(AlgoOverride, EmptyMeansNoRules) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("", &rules).isOk());
  EXPECT_TRUE(rules.empty());
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 8), nullptr);
}

TEST(AlgoOverride, BareNameAppliesToCollectivesThatHaveIt) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("ring", &rules).isOk());
  ASSERT_NE(matchRule(rules, Collective::allreduce, 1 << 20), nullptr);
  EXPECT_EQ(matchRule(rules, Collective::broadcast, 1 << 20), nullptr) << "broadcast has no ring";
  ASSERT_TRUE(parseAlgoOverride("direct", &rules).isOk());
  EXPECT_NE(matchRule(rules, Collective::broadcast, 8), nullptr);
  EXPECT_NE(matchRule(rules, Collective::allreduce, 8), nullptr);
}

TEST(AlgoOverride, SizeRangesAreHalfOpenAndFirstMatchWins) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("allreduce:0-64K:direct;allreduce:64K-inf:ring;broadcast:chain", &rules).isOk());
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 0)->algorithm, "direct");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 65535)->algorithm, "direct");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, 65536)->algorithm, "ring");
  EXPECT_EQ(matchRule(rules, Collective::allreduce, SIZE_MAX - 1)->algorithm, "ring");
  EXPECT_EQ(matchRule(rules, Collective::broadcast, 1)->algorithm, "chain");
  ASSERT_TRUE(parseAlgoOverride("allreduce:1M-2M:ring", &rules).isOk());
  EXPECT_EQ(matchRule(rules, Collective::allreduce, (1 << 20) - 1), nullptr);
  EXPECT_NE(matchRule(rules, Collective::allreduce, 1 << 20), nullptr);
}

TEST(AlgoOverride, BadRulesNameTheProblem) {
  std::vector<AlgoRule> rules;
  Status st = parseAlgoOverride("allreduce:tree", &rules);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("unknown algorithm 'tree'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ring"), std::string::npos) << "lists the valid ones: " << st.message();
  st = parseAlgoOverride("allscatter:ring", &rules);
  EXPECT_NE(st.message().find("unknown collective"), std::string::npos) << st.message();
  st = parseAlgoOverride("allreduce:64K-0:ring", &rules);
  EXPECT_NE(st.message().find("bad size range"), std::string::npos) << st.message();
  st = parseAlgoOverride("broadcast:ring", &rules);
  EXPECT_FALSE(st.isOk()) << "broadcast has no ring";
  EXPECT_FALSE(parseAlgoOverride("a:b:c:d", &rules).isOk());
  // Sizes no size_t holds (converting them was undefined behaviour): refused, not wrapped.
  for (const char* huge : {"allreduce:1e30-inf:ring", "allreduce:nan-inf:ring", "allreduce:0-1e20:ring", "allreduce:0-17179869184G:ring"}) {
    st = parseAlgoOverride(huge, &rules);
    EXPECT_NE(st.message().find("bad size range"), std::string::npos) << huge << ": " << st.message();
  }
}

HostGrouping hostsOf(int num_hosts) {
  HostGrouping h;
  h.num_hosts = num_hosts;
  return h;
}

TEST(Selector, OneHostUsesDirectAndSeveralUseRingAndChain) {
  Selector one({}, hostsOf(1));
  EXPECT_STREQ(one.choose(Collective::allreduce, 8).algorithm->name, "direct");
  EXPECT_STREQ(one.choose(Collective::broadcast, 1 << 28).algorithm->name, "direct");
  Selector many({}, hostsOf(4));
  EXPECT_STREQ(many.choose(Collective::allreduce, 8).algorithm->name, "direct") << "small: fewest hops";
  Choice c = many.choose(Collective::allreduce, 1 << 28);
  EXPECT_STREQ(c.algorithm->name, "ring");
  EXPECT_NE(c.reason.find("4 hosts"), std::string::npos) << c.reason;
  EXPECT_STREQ(many.choose(Collective::broadcast, 1 << 28).algorithm->name, "chain");
  EXPECT_STREQ(many.choose(Collective::broadcast, 8).algorithm->name, "binomial") << "one slice: fewest hops";
}

TEST(Selector, RulesOverrideTheDefaultAndSayWhy) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoOverride("allreduce:0-1K:direct", &rules).isOk());
  Selector s(rules, hostsOf(4));
  Choice small = s.choose(Collective::allreduce, 512);
  EXPECT_STREQ(small.algorithm->name, "direct");
  EXPECT_NE(small.reason.find("COLL_ALGO"), std::string::npos) << small.reason;
  EXPECT_STREQ(s.choose(Collective::allreduce, 1 << 20).algorithm->name, "ring");
}

}  // namespace
}  // namespace coll::topology
