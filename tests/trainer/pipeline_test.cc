// The input pipeline: digits shards (disjoint, covering the split, only the rank's lines), the
// sampler (equal batches, deterministic per step), and the prefetcher (order, errors, deadline).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <thread>

#include "tasks/digits.h"
#include "trainer/prefetcher.h"

namespace coll::trainer {
namespace {

bool haveDigits() {
  std::FILE* f = std::fopen(kDefaultDigitsPath, "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

std::vector<float> rowOf(const Dataset& d, size_t i) {
  return std::vector<float>(d.features.row(i), d.features.row(i) + d.features.cols);
}

TEST(TrainerPipeline, DigitsShardsPartitionEachSplit) {
  if (!haveDigits()) GTEST_SKIP() << "no " << kDefaultDigitsPath << " (apt-get install python3-sklearn)";
  for (Split split : {Split::train, Split::test}) {
    Dataset whole = loadDigitsShard(kDefaultDigitsPath, split, 0, 1);
    EXPECT_EQ(whole.size(), split == Split::train ? kDigitsTrain : kDigitsTest);
    size_t total = 0;
    for (int r = 0; r < 3; ++r) {
      Dataset shard = loadDigitsShard(kDefaultDigitsPath, split, r, 3);
      // Example j of the split belongs to rank j % 3, in order.
      for (size_t i = 0; i < shard.size(); ++i) {
        size_t j = i * 3 + static_cast<size_t>(r);
        ASSERT_EQ(shard.labels[i], whole.labels[j]);
        ASSERT_EQ(rowOf(shard, i), rowOf(whole, j));
      }
      total += shard.size();
    }
    EXPECT_EQ(total, whole.size());
  }
  Dataset first = loadDigitsShard(kDefaultDigitsPath, Split::test, 0, 1);
  EXPECT_EQ(first.labels[0], 0);  // the file's first line is a 0, and a test example
  EXPECT_FLOAT_EQ(first.features.at(0, 2), 5.0f / 16);
}

TEST(TrainerPipeline, MissingFileNamesThePath) {
  try {
    loadDigitsShard("/nonexistent/digits.csv.gz", Split::train, 0, 1);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/digits.csv.gz"), std::string::npos) << e.what();
  }
}

TEST(TrainerPipeline, SamplerIsDeterministicAndCoversAnEpoch) {
  Dataset d;
  d.features.resize(10, 1);
  for (size_t i = 0; i < 10; ++i) {
    d.features.at(i, 0) = static_cast<float>(i);
    d.labels.push_back(static_cast<int>(i));
  }
  ShardSampler sampler(d, 3, 3, 7, 0);
  std::set<int> seen;
  for (int64_t s = 0; s < 3; ++s) {
    Batch b = sampler.batch(s);
    ASSERT_EQ(b.labels.size(), 3u);
    EXPECT_EQ(b.labels, sampler.batch(s).labels);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b.features.at(i, 0), static_cast<float>(b.labels[i]));
    seen.insert(b.labels.begin(), b.labels.end());
  }
  EXPECT_EQ(seen.size(), 9u);  // no example twice within an epoch
  EXPECT_THROW(ShardSampler(d, 4, 3, 7, 0), std::invalid_argument);
}

TEST(TrainerPipeline, PrefetcherDeliversStepsInOrderAheadOfTheConsumer) {
  std::atomic<int64_t> produced{-1};
  Prefetcher<int64_t> p([&](int64_t s) { produced = s; return s * 10; }, 5, 9, std::chrono::seconds(10));
  for (int64_t s = 5; s < 9; ++s) {
    EXPECT_EQ(p.next(), s * 10);
    if (s + 1 < 9) {  // the next batch is prepared without being asked for
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (produced < s + 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      EXPECT_EQ(produced, s + 1);
    }
  }
}

TEST(TrainerPipeline, PrefetcherRethrowsAndTimesOut) {
  Prefetcher<int> failing([](int64_t) -> int { throw std::runtime_error("shard unreadable"); }, 0, 3,
                          std::chrono::seconds(10));
  EXPECT_THROW(failing.next(), std::runtime_error);
  Prefetcher<int> slow([](int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); return 1; }, 0, 1,
                       std::chrono::milliseconds(20));
  try {
    slow.next();
    FAIL() << "no timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("step 0 not ready"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coll::trainer
