// p2p::Matcher (src/p2p/matcher.h): MPI's matching rules, checked on scenarios and against
// a brute-force model on random interleavings of posts and arrivals.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "p2p/matcher.h"

namespace coll::p2p {
namespace {

Envelope env(int source, int tag, uint64_t token) { return Envelope{source, tag, 0, 8, token}; }
Receive recv(uint64_t id, int source, int tag) { return Receive{id, source, tag, 8}; }

TEST(P2pMatcher, AReceivePostedFirstIsCompletedByTheArrival) {
  Matcher m;
  EXPECT_FALSE(m.post(recv(1, 3, 0)));
  EXPECT_EQ(m.postedCount(), 1u);
  auto r = m.arrive(env(3, 0, 100));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 1u);
  EXPECT_EQ(m.postedCount(), 0u);
  EXPECT_EQ(m.unexpectedCount(), 0u);
}

TEST(P2pMatcher, MessagesOfOneSourceAndTagMatchInSendOrder) {
  Matcher m;
  for (uint64_t t = 0; t < 5; ++t) EXPECT_FALSE(m.arrive(env(2, 7, t)));
  for (uint64_t t = 0; t < 5; ++t) EXPECT_EQ(m.post(recv(t, 2, 7))->token, t);
}

TEST(P2pMatcher, TagsAndSourcesAreIndependent) {
  Matcher m;
  EXPECT_FALSE(m.post(recv(1, 0, 5)));  // waits for tag 5 from rank 0
  EXPECT_FALSE(m.arrive(env(0, 6, 60)));  // tag 6 does not take it
  EXPECT_FALSE(m.arrive(env(1, 5, 15)));  // rank 1 does not take it
  EXPECT_EQ(m.arrive(env(0, 5, 50))->id, 1u);
  EXPECT_EQ(m.post(recv(2, 1, 5))->token, 15u);
  EXPECT_EQ(m.post(recv(3, 0, 6))->token, 60u);
}

TEST(P2pMatcher, AnySourceTakesTheOldestArrivalOfItsTag) {
  Matcher m;
  m.arrive(env(4, 1, 40));
  m.arrive(env(2, 1, 20));
  m.arrive(env(3, 9, 30));
  EXPECT_EQ(m.post(recv(1, kAnySource, 1))->token, 40u);
  EXPECT_EQ(m.post(recv(2, kAnySource, 1))->token, 20u);
  EXPECT_FALSE(m.post(recv(3, kAnySource, 1)));
  EXPECT_EQ(m.arrive(env(3, 1, 31))->id, 3u);
}

TEST(P2pMatcher, BetweenSpecificAndAnySourceTheFirstPostedWins) {
  Matcher m;
  m.post(recv(1, kAnySource, 0));
  m.post(recv(2, 5, 0));
  EXPECT_EQ(m.arrive(env(5, 0, 0))->id, 1u);  // the any-source receive was posted first
  EXPECT_EQ(m.arrive(env(5, 0, 1))->id, 2u);
  m.post(recv(3, 5, 0));
  m.post(recv(4, kAnySource, 0));
  EXPECT_EQ(m.arrive(env(5, 0, 2))->id, 3u);  // now the specific one was
  EXPECT_EQ(m.arrive(env(6, 0, 3))->id, 4u);
}

TEST(P2pMatcher, AThousandOutstandingAndTakeAllInPostOrder) {
  Matcher m;
  for (uint64_t i = 0; i < 1000; ++i) m.post(recv(i, static_cast<int>(i % 7), static_cast<int>(i % 3)));
  EXPECT_EQ(m.postedCount(), 1000u);
  for (uint64_t i = 0; i < 500; ++i) ASSERT_TRUE(m.arrive(env(static_cast<int>(i % 7), static_cast<int>(i % 3), i)));
  auto rest = m.takeAllPosted();
  ASSERT_EQ(rest.size(), 500u);
  for (size_t k = 0; k < rest.size(); ++k) EXPECT_EQ(rest[k].id, 500 + k);
  EXPECT_EQ(m.postedCount(), 0u);
}

// The rules, by brute force: the posted receives and unexpected envelopes in two lists in the
// order they came; a post takes the first unexpected envelope it matches (for any source, the
// first with its tag); an arrival takes the first posted receive that matches it.
struct Model {
  std::vector<Receive> posted;
  std::vector<Envelope> unexpected;
  std::optional<Envelope> post(const Receive& r) {
    for (size_t i = 0; i < unexpected.size(); ++i) {
      const Envelope& e = unexpected[i];
      if (e.tag == r.tag && (r.source == kAnySource || r.source == e.source)) {
        Envelope out = e;
        unexpected.erase(unexpected.begin() + static_cast<long>(i));
        return out;
      }
    }
    posted.push_back(r);
    return std::nullopt;
  }
  std::optional<Receive> arrive(const Envelope& e) {
    for (size_t i = 0; i < posted.size(); ++i) {
      const Receive& r = posted[i];
      if (e.tag == r.tag && (r.source == kAnySource || r.source == e.source)) {
        Receive out = r;
        posted.erase(posted.begin() + static_cast<long>(i));
        return out;
      }
    }
    unexpected.push_back(e);
    return std::nullopt;
  }
};

TEST(P2pMatcher, AgreesWithTheRulesOnRandomInterleavings) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 200; ++round) {
    Matcher m;
    Model model;
    uint64_t next = 1;
    for (int step = 0; step < 300; ++step) {
      int source = static_cast<int>(rng() % 4), tag = static_cast<int>(rng() % 3);
      if (rng() % 2) {
        Receive r = recv(next++, rng() % 5 == 0 ? kAnySource : source, tag);
        auto got = m.post(r);
        auto want = model.post(r);
        ASSERT_EQ(got.has_value(), want.has_value()) << "round " << round << " step " << step;
        if (got) {
          ASSERT_EQ(got->token, want->token) << "round " << round << " step " << step;
        }
      } else {
        Envelope e = env(source, tag, next++);
        auto got = m.arrive(e);
        auto want = model.arrive(e);
        ASSERT_EQ(got.has_value(), want.has_value()) << "round " << round << " step " << step;
        if (got) {
          ASSERT_EQ(got->id, want->id) << "round " << round << " step " << step;
        }
      }
    }
    EXPECT_EQ(m.postedCount(), model.posted.size());
    EXPECT_EQ(m.unexpectedCount(), model.unexpected.size());
  }
}

}  // namespace
}  // namespace coll::p2p
