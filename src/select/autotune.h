// COLL_TUNE=1: at init, measure every all-reduce candidate of the catalogue on a few fixed
// sizes, keep the fastest per size, and store the table (tuning.h) keyed by the topology's
// layout hash, so the next run on the same machines reads it instead of measuring.
//
// Agreement: rank 0 decides. It looks for the file and publishes either the table it found or
// "measure" in the store; then every rank measures the same candidates on the same sizes in
// the same order (they are collectives), rank 0 picks the winners from its own timings,
// writes the file and publishes the table, and every rank installs the same one.
// Cost: sizes 8 B to 4 MiB (a factor 16 apart; the median of 15 runs up to 64 KiB, the best of
// 2 above), per candidate: about 1.5 s on 2 hosts x 2 ranks at 1 Gbit/s, milliseconds on one
// host.
#pragma once

#include <functional>
#include <string>

#include "algorithms/catalog.h"
#include "topology/link_probe.h"
#include "select/tuning.h"

namespace coll::select {

// Runs one all-reduce of `bytes` with the given algorithm over the job; *seconds: this rank's
// time for it.
using TimedAllreduce = std::function<Status(const algo::AlgorithmInfo&, size_t bytes, double* seconds)>;

// Collective. `path`: the tuning file (defaultTuningPath). Logs at INFO (TUNE) what it did.
Status autotune(const topology::ProbeContext& ctx, const std::string& path, const std::string& layout_hash,
                const TimedAllreduce& run, TuningTable* out);

}  // namespace coll::select
