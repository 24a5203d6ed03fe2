// Sizes gradient buckets from measurements instead of a fixed 25 MiB (an option beyond DDP).
//
// Model (documented in docs/TRAINER.md): backward produces the G gradient bytes at a steady
// rate over T_b seconds. With K buckets of B = G/K bytes, bucket k is ready at k*T_b/K; the
// buckets are all-reduced one after another, each taking alpha + B / throughput, where alpha
// is the fixed cost of one all-reduce and throughput its bytes per second for large buffers
// (for a ring on links of bandwidth bw: bw * n / (2(n-1))). So
//   start_k = max(k*T_b/K, end_{k-1}),  end_k = start_k + alpha + B/throughput,
// and the step's exposed communication is end_K - T_b. Few buckets start late (the last one,
// large, runs entirely after backward); many pay alpha each. We simulate K = 1..max and keep
// the K with the smallest end_K (the smallest K on ties).
#pragma once

#include <cstddef>

namespace coll::trainer {

struct BucketSizingInput {
  double backward_seconds = 0;
  double gradient_bytes = 0;
  double allreduce_alpha_seconds = 0;     // one small all-reduce
  double allreduce_bytes_per_second = 0;  // a large all-reduce's bytes / its time (minus alpha)
  size_t max_buckets = 256;
};

struct BucketSizingResult {
  size_t buckets = 1;
  size_t bucket_bytes = 0;
  double predicted_end_seconds = 0;   // end_K, from the start of backward
  double predicted_exposed_seconds = 0;
};

BucketSizingResult sizeBuckets(const BucketSizingInput& in);

}  // namespace coll::trainer
