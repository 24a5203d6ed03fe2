// The shared-memory board as a catalogue entry (algorithms/board.h): the selector scores it
// like any algorithm where the communicator says a board exists, picks it for small ops on one
// host, and never hands it to the scheduled path.
#include <gtest/gtest.h>

#include "algorithms/board.h"
#include "base/json.h"
#include "base/log.h"
#include "select/algo_override.h"
#include "select/selector.h"

namespace coll::select {
namespace {

using algo::Collective;

// One host of n ranks with the documented default link figures.
Selector oneHost(int n, std::vector<AlgoRule> rules = {}) {
  bootstrap::HostGrouping hosts;
  hosts.num_hosts = 1;
  hosts.host_of_rank.assign(n, "h0");
  hosts.local_size = n;
  hosts.ranks_of_host = {{}};
  for (int r = 0; r < n; ++r) hosts.ranks_of_host[0].push_back(r);
  return Selector(std::move(rules), topology::topologyFromGrouping(hosts));
}

std::vector<AlgoRule> rules(const char* text) {
  std::vector<AlgoRule> out;
  EXPECT_TRUE(parseAlgoOverride(text, &out).isOk()) << text;
  return out;
}

TEST(BoardEntry, IsInTheCatalogueWithoutASchedule) {
  for (Collective c : {Collective::allreduce, Collective::broadcast}) {
    const algo::AlgorithmInfo* board = algo::findAlgorithm(c, "board");
    ASSERT_NE(board, nullptr);
    EXPECT_FALSE(board->isSchedule());
    EXPECT_NE(board->cost, nullptr);
  }
  EXPECT_EQ(algo::findAlgorithm(Collective::reduce, "board"), nullptr);
}

TEST(BoardEntry, WithoutABoardTheModelRefusesItWithAReason) {
  Selector s = oneHost(4);
  const Choice& c = s.choose(Collective::allreduce, 8);
  EXPECT_TRUE(c.algorithm->isSchedule());
  EXPECT_FALSE(s.picksBoard(Collective::allreduce, 8));
  bool named = false;
  for (const Rejected& r : c.rejected)
    if (r.algorithm == "board") named = r.predicted_s < 0 && r.reason.find("one host") != std::string::npos;
  EXPECT_TRUE(named) << describeRejected(c.rejected);
}

TEST(BoardEntry, PickedForSmallOpsUpToItsCells) {
  for (int n : {2, 3, 4}) {
    Selector s = oneHost(n);
    s.setBoard(4096, algo::cost::kBoardBroadcastBytes);
    SCOPED_TRACE(n);
    EXPECT_TRUE(s.picksBoard(Collective::allreduce, 8));
    EXPECT_EQ(std::string(s.choose(Collective::allreduce, 8).algorithm->name), "board");
    EXPECT_GT(s.choose(Collective::allreduce, 8).predicted_s, 0);
    EXPECT_TRUE(s.picksBoard(Collective::broadcast, 8));
    EXPECT_GE(s.boardUpTo(Collective::allreduce), 8u);
    EXPECT_LE(s.boardUpTo(Collective::allreduce), 4096u);
    EXPECT_LE(s.boardUpTo(Collective::broadcast), algo::cost::kBoardBroadcastBytes);
    EXPECT_FALSE(s.picksBoard(Collective::allreduce, 4097)) << "beyond its cells";
    EXPECT_FALSE(s.picksBoard(Collective::allreduce, 0));
    EXPECT_FALSE(s.picksBoard(Collective::broadcast, 4096));
    // The scheduled path never gets it (a device op staged on the host).
    EXPECT_TRUE(s.choose(Collective::allreduce, 8, 4, true).algorithm->isSchedule());
    // picksBoard and choose agree at every size up to the cells.
    for (size_t bytes = 1; bytes <= 4096; bytes += 97)
      EXPECT_EQ(s.picksBoard(Collective::allreduce, bytes), !s.choose(Collective::allreduce, bytes).algorithm->isSchedule())
          << bytes;
  }
}

TEST(BoardEntry, ARuleForTheSizeWinsEitherWay) {
  Selector s = oneHost(4, rules("allreduce:0-1K:ring"));
  s.setBoard(4096, algo::cost::kBoardBroadcastBytes);
  EXPECT_FALSE(s.picksBoard(Collective::allreduce, 8));
  EXPECT_EQ(std::string(s.choose(Collective::allreduce, 8).algorithm->name), "ring");
  EXPECT_TRUE(s.picksBoard(Collective::allreduce, 2048)) << "no rule for 2 KiB: the model's board";
  Selector forced = oneHost(4, rules("allreduce:board"));
  forced.setBoard(4096, algo::cost::kBoardBroadcastBytes);
  EXPECT_TRUE(forced.picksBoard(Collective::allreduce, 4096));
  EXPECT_NE(forced.choose(Collective::allreduce, 4096).reason.find("COLL_ALGO"), std::string::npos);
  EXPECT_FALSE(forced.picksBoard(Collective::allreduce, 8192)) << "a rule cannot grow its cells";
}

TEST(BoardEntry, ARuleNamingItWhereThereIsNoneFallsBackToASchedule) {
  Selector s = oneHost(4, rules("allreduce:board"));
  const Choice& c = s.choose(Collective::allreduce, 8);
  EXPECT_TRUE(c.algorithm->isSchedule());
  EXPECT_NE(c.reason.find("names the board, which cannot take it here"), std::string::npos) << c.reason;
}

TEST(BoardEntry, DeterministicKeepsItBecauseItCombinesInRankOrder) {
  Selector s = oneHost(3);
  s.setDeterministic(true);
  s.setBoard(4096, algo::cost::kBoardBroadcastBytes);
  const Choice& c = s.choose(Collective::allreduce, 8);
  EXPECT_EQ(std::string(c.algorithm->name), "board");
  EXPECT_NE(c.reason.find("rank order"), std::string::npos) << c.reason;
  EXPECT_EQ(std::string(s.choose(Collective::allreduce, 1 << 20).algorithm->name), "ordered");
}

}  // namespace
}  // namespace coll::select
