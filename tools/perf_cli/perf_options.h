// Command-line options of the perf tests: nccl-tests' flags and defaults, so that command
// lines written for all_reduce_perf & co. run unchanged. Flags coll cannot honour (CUDA
// graphs, several threads or GPUs per process, ...) are refused with a reason rather than
// silently ignored, so a result never looks like something it is not.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coll/types.h"

namespace coll::bench {

struct PerfOptions {
  size_t minBytes = size_t{32} << 20;
  size_t maxBytes = size_t{32} << 20;
  size_t stepBytes = size_t{1} << 20;  // used when stepFactor is 1
  size_t stepFactor = 1;
  int iters = 20;
  int warmupIters = 5;
  int aggIters = 1;  // ops per timed iteration; the time is per op either way
  int check = 1;     // checked runs per measurement; 0: no check ("#wrong" shows N/A)
  std::vector<ReduceOp> ops = {ReduceOp::sum};
  std::vector<DataType> types = {DataType::f32};
  int root = 0;        // -1: every rank in turn
  int blocking = 0;    // 1: wait for each op, then a barrier; 2: wait only
  int timeoutSec = 0;  // 0: only the ops' own deadline (COLL_TIMEOUT) applies
  bool reportCpuTime = false;
  // -K 1: each timed op is waited for before the next, and each cell adds the median and 99th
  // percentile of those per-op times (pooled over ranks) and the CPU-seconds per GB of buffer
  // spent by all ranks together (user + system, every thread).
  bool latencyStats = false;
  int average = 1;  // time reported over ranks: 0 rank 0's, 1 mean, 2 min, 3 max
  std::string jsonPath;
  bool deviceBuffers = false;  // -X 1: buffers in GPU memory (a CUDA build)
  // -R 1: host buffers from collMemAlloc (as nccl-tests' -R takes ncclMemAlloc's memory).
  bool libraryBuffers = false;
  // -Q "auto ring tree": those algorithms side by side in this job (Communicator::setAlgorithms),
  // -j interleaved rounds of each; "auto" is the selector's own choice.
  std::vector<std::string> algos;
  int algoRounds = 3;
};

enum class ParseResult { kRun, kHelp, kError };

// Every rank parses the same argv and so reaches the same verdict. On kError, *error holds
// a one-line reason.
ParseResult parsePerfOptions(int argc, char** argv, PerfOptions* options, std::string* error);

std::string perfUsage(const char* program);

// minBytes, then times stepFactor (or plus stepBytes) while not above maxBytes.
std::vector<size_t> sweepSizes(const PerfOptions& options);

// Sizes as in "-b 32M": a number with an optional K, M or G (powers of 1024) suffix.
bool parseSize(const char* text, size_t* bytes);

}  // namespace coll::bench
