#include "trainer/bucket_sizing.h"

#include <algorithm>

namespace coll::trainer {
namespace {

double simulateEnd(const BucketSizingInput& in, size_t k_buckets) {
  double bytes = in.gradient_bytes / static_cast<double>(k_buckets);
  double per_bucket = in.allreduce_alpha_seconds + bytes / in.allreduce_bytes_per_second;
  double end = 0;
  for (size_t k = 1; k <= k_buckets; ++k) {
    double ready = in.backward_seconds * static_cast<double>(k) / static_cast<double>(k_buckets);
    end = std::max(ready, end) + per_bucket;
  }
  return end;
}

}  // namespace

BucketSizingResult sizeBuckets(const BucketSizingInput& in) {
  BucketSizingResult best;
  if (in.gradient_bytes <= 0 || in.allreduce_bytes_per_second <= 0) return best;
  best.predicted_end_seconds = simulateEnd(in, 1);
  for (size_t k = 2; k <= std::max<size_t>(1, in.max_buckets); ++k) {
    double end = simulateEnd(in, k);
    if (end < best.predicted_end_seconds) {
      best.predicted_end_seconds = end;
      best.buckets = k;
    }
  }
  best.bucket_bytes = static_cast<size_t>(in.gradient_bytes / static_cast<double>(best.buckets));
  best.predicted_exposed_seconds = best.predicted_end_seconds - in.backward_seconds;
  return best;
}

}  // namespace coll::trainer
