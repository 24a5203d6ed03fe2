// How many messages the whole job sends in one all-reduce, per algorithm, counted the way the
// schedule builders emit them: one per non-empty slice of a chunk per step. Empty chunks send
// nothing (a buffer of c < n elements has only c non-empty chunks of n), and a chunk larger
// than the slice goes as several messages. The cost model charges each message the share of
// the loaded step that contention adds (cost_model.cc).
//
// Pure arithmetic over the algorithms' patterns (ring::chunk, hd::halvingStep): each function
// mirrors one builder in src/algorithms/, and a change to a builder's chunking changes its
// count here.
#pragma once

#include <cstddef>

namespace coll::algo::cost::messages {

struct Shape {
  size_t count = 0;      // elements
  size_t per_slice = 1;  // elements per slice (COLL_SLICE_BYTES / element size, at least 1)
  int n = 1;             // ranks
  int hosts = 1;         // for hierarchical: H hosts of L ranks each
  int per_host = 1;
};

double ringAllreduce(const Shape& s);
double directAllreduce(const Shape& s);
double hierarchicalAllreduce(const Shape& s);
double treeAllreduce(const Shape& s);
double rhdAllreduce(const Shape& s);
double rdAllreduce(const Shape& s);

}  // namespace coll::algo::cost::messages
