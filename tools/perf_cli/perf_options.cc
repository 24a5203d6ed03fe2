#include "perf_options.h"

#include <getopt.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace coll::bench {
namespace {

struct Flag {
  char letter;
  const char* name;
  bool takesValue;
};

constexpr Flag kSupported[] = {
    {'t', "nthreads", true},       {'g', "ngpus", true},     {'b', "minbytes", true},
    {'e', "maxbytes", true},       {'i', "stepbytes", true}, {'f', "stepfactor", true},
    {'n', "iters", true},          {'m', "agg_iters", true}, {'w', "warmup_iters", true},
    {'p', "parallel_init", true},  {'c', "check", true},     {'o', "op", true},
    {'d', "datatype", true},       {'r', "root", true},      {'z', "blocking", true},
    {'y', "stream_null", true},    {'T', "timeout", true},   {'G', "cudagraph", true},
    {'C', "report_cputime", true}, {'a', "average", true},   {'J', "output_file", true},
    {'X', "device_buffers", true}, {'K', "latency_stats", true},
    {'R', "local_register", true},
    {'Q', "compare_algos", true},  {'j', "algo_rounds", true},
    {'h', "help", false},
};

// nccl-tests flags with no meaning for coll (CUDA, NCCL internals, trace replay). They are
// recognised only to name them in the refusal.
constexpr Flag kUnsupported[] = {
    {'N', "run_cycles", true},
    {'k', "side_comp", true},
    {'l', "replay", true},
    {'O', "out_of_place", true},
    {'u', "unalign", true},
    {'x', "cta_policy", true},
    {'B', "commblocking", true},
    {'F', "ft_test", true},
    {'L', "ft_list", true},
    {'s', "tbytes", true},
    {'S', "split_share", true},
    {'P', "split_comm", true},
    {'A', "per_coll_perf", true},
    {'E', "simulate", true},
    {'I', "init_ids", true},
    {'q', "traffic_class", true},
    {'U', "tuning", true},
    {'D', "device_implementation", true},
    {'V', "device_cta_count", true},
    {'M', "memory", true},
    {'H', "host_rma_implementation", false},
};

const Flag* findFlag(int letter) {
  for (const Flag& f : kSupported) {
    if (f.letter == letter) return &f;
  }
  for (const Flag& f : kUnsupported) {
    if (f.letter == letter) return &f;
  }
  return nullptr;
}

std::string flagName(int letter) {
  const Flag* f = findFlag(letter);
  return std::string("-") + static_cast<char>(letter) +
         (f ? std::string(" (") + f->name + ")" : "");
}

bool parseInt(const char* text, long lo, long hi, int* out) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool intFlag(int letter, const char* text, long lo, long hi, int* out, std::string* error) {
  if (parseInt(text, lo, hi, out)) return true;
  *error = "invalid value '" + std::string(text) + "' for " + flagName(letter) +
           ": expected an integer from " + std::to_string(lo) +
           (hi == INT_MAX ? " up" : " to " + std::to_string(hi));
  return false;
}

bool sizeFlag(int letter, const char* text, size_t* out, std::string* error) {
  if (parseSize(text, out)) return true;
  *error = "invalid size '" + std::string(text) + "' for " + flagName(letter) +
           ": expected bytes, optionally with a K, M or G suffix";
  return false;
}

bool parseOps(const char* text, std::vector<ReduceOp>* ops, std::string* error) {
  if (std::strcmp(text, "all") == 0) {
    *ops = {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min, ReduceOp::avg};
    return true;
  }
  if (auto op = parseReduceOp(text)) {
    *ops = {*op};
    return true;
  }
  *error =
      std::strcmp(text, "mulsum") == 0
          ? "-o mulsum (pre-multiplied sum) is not supported by coll"
          : "unknown reduction '" + std::string(text) + "' for -o: sum, prod, min, max, avg or all";
  return false;
}

bool parseTypes(const char* text, std::vector<DataType>* types, std::string* error) {
  if (std::strcmp(text, "all") == 0) {
    *types = {DataType::i8,  DataType::u8,  DataType::i32, DataType::u32, DataType::i64,
              DataType::u64, DataType::f16, DataType::f32, DataType::f64, DataType::bf16};
    return true;
  }
  if (auto type = parseDataType(text)) {
    *types = {*type};
    return true;
  }
  *error = "unknown datatype '" + std::string(text) +
           "' for -d: int8, uint8, int32, uint32, int64, uint64, half, float, double, "
           "bfloat16 or all";
  return false;
}

// Values coll cannot honour are refused; see the header for why.
bool requireValue(int letter, const char* text, int wanted, const char* why, std::string* error) {
  int v = 0;
  if (!intFlag(letter, text, INT_MIN, INT_MAX, &v, error)) return false;
  if (v == wanted) return true;
  *error = flagName(letter) + " " + text + " is not supported: " + why;
  return false;
}

bool applyCountFlag(int c, const char* arg, PerfOptions* o, std::string* error) {
  int v = 0;
  switch (c) {
    case 'f':
      if (!intFlag(c, arg, 1, INT_MAX, &v, error)) return false;
      o->stepFactor = static_cast<size_t>(v);
      return true;
    case 'n': return intFlag(c, arg, 1, INT_MAX, &o->iters, error);
    case 'm': return intFlag(c, arg, 1, INT_MAX, &o->aggIters, error);
    case 'w': return intFlag(c, arg, 0, INT_MAX, &o->warmupIters, error);
    case 'c': return intFlag(c, arg, 0, INT_MAX, &o->check, error);
    case 'z': return intFlag(c, arg, 0, 2, &o->blocking, error);
    case 'T': return intFlag(c, arg, 0, INT_MAX, &o->timeoutSec, error);
    case 'a': return intFlag(c, arg, 0, 3, &o->average, error);
    case 'p': return intFlag(c, arg, 0, 1, &v, error);  // one thread per process: no effect
    case 'C':
      if (!intFlag(c, arg, 0, 1, &v, error)) return false;
      o->reportCpuTime = v != 0;
      return true;
    case 'X':
      if (!intFlag(c, arg, 0, 1, &v, error)) return false;
      o->deviceBuffers = v != 0;
      return true;
    case 'K':
      if (!intFlag(c, arg, 0, 1, &v, error)) return false;
      o->latencyStats = v != 0;
      return true;
    case 'R':
      if (!intFlag(c, arg, 0, 1, &v, error)) return false;
      o->libraryBuffers = v != 0;
      return true;
  }
  *error = "internal: unhandled flag " + flagName(c);
  return false;
}

// "auto ring tree" or "auto,ring,tree": names as COLL_ALGO spells them, checked by the
// communicator when it applies them.
bool parseAlgos(const char* arg, std::vector<std::string>* algos, std::string* error) {
  algos->clear();
  std::string name;
  for (const char* p = arg;; ++p) {
    if (*p == ' ' || *p == ',' || *p == '\0') {
      if (!name.empty()) algos->push_back(name);
      name.clear();
      if (*p == '\0') break;
    } else {
      name += *p;
    }
  }
  if (!algos->empty()) return true;
  *error = "-Q needs at least one algorithm name (auto, ring, tree, ...)";
  return false;
}

bool applyFlag(int c, const char* arg, PerfOptions* o, std::string* error) {
  switch (c) {
    case 'b': return sizeFlag(c, arg, &o->minBytes, error);
    case 'e': return sizeFlag(c, arg, &o->maxBytes, error);
    case 'i': return sizeFlag(c, arg, &o->stepBytes, error);
    case 'o': return parseOps(arg, &o->ops, error);
    case 'd': return parseTypes(arg, &o->types, error);
    case 'J': o->jsonPath = arg; return true;
    case 'Q': return parseAlgos(arg, &o->algos, error);
    case 'j': return intFlag(c, arg, 1, 100, &o->algoRounds, error);
    case 'r':
      if (std::strcmp(arg, "all") == 0) {
        o->root = -1;
        return true;
      }
      return intFlag(c, arg, -1, INT_MAX, &o->root, error);
    case 't':
    case 'g':
      return requireValue(c, arg, 1, "coll runs one rank per process; start more processes", error);
    case 'G':
      return requireValue(c, arg, 0, "coll has no CUDA graphs; its ops run on host memory", error);
    case 'y': return requireValue(c, arg, 0, "coll ops take no CUDA stream", error);
  }
  return applyCountFlag(c, arg, o, error);
}

bool validate(const PerfOptions& o, std::string* error) {
  if (o.minBytes > o.maxBytes) {
    *error = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(o.minBytes) + " > " +
             std::to_string(o.maxBytes);
    return false;
  }
  // Both would make the sweep repeat one size forever.
  if (o.stepFactor > 1 && o.minBytes == 0) {
    *error = "-b (minbytes) must be above 0 when -f (stepfactor) is above 1";
    return false;
  }
  if (o.stepFactor <= 1 && o.stepBytes == 0) {
    *error = "-i (stepbytes) must be above 0 when -f (stepfactor) is 1";
    return false;
  }
  return true;
}

struct GetoptTables {
  std::string shortOptions = ":";  // leading ':' reports a missing value as ':'
  std::vector<option> longOptions;
};

GetoptTables makeTables() {
  GetoptTables t;
  auto add = [&t](const Flag& f) {
    t.shortOptions += f.letter;
    if (f.takesValue) t.shortOptions += ':';
    t.longOptions.push_back(
        {f.name, f.takesValue ? required_argument : no_argument, nullptr, f.letter});
  };
  for (const Flag& f : kSupported) add(f);
  for (const Flag& f : kUnsupported) add(f);
  t.longOptions.push_back({"json", required_argument, nullptr, 'J'});  // coll's own spelling
  t.longOptions.push_back({nullptr, 0, nullptr, 0});
  return t;
}

bool isUnsupported(int c) {
  for (const Flag& f : kUnsupported) {
    if (f.letter == c) return true;
  }
  return false;
}

}  // namespace

bool parseSize(const char* text, size_t* bytes) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (errno != 0 || end == text || !(value >= 0)) return false;
  while (std::isspace(static_cast<unsigned char>(*end))) ++end;
  double unit = 1;
  switch (std::tolower(static_cast<unsigned char>(*end))) {
    case 'k':
      unit = 1024.0;
      ++end;
      break;
    case 'm':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    case '\0': break;
    default: return false;
  }
  if (*end != '\0') return false;
  double total = value * unit;
  if (total >= 18446744073709551616.0) return false;  // 2^64: beyond size_t
  *bytes = static_cast<size_t>(total);
  return true;
}

ParseResult parsePerfOptions(int argc, char** argv, PerfOptions* options, std::string* error) {
  GetoptTables tables = makeTables();
  optind = 1;
  opterr = 0;
  while (true) {
    int c =
        getopt_long(argc, argv, tables.shortOptions.c_str(), tables.longOptions.data(), nullptr);
    if (c == -1) break;
    if (c == 'h') return ParseResult::kHelp;
    if (c == '?') {
      *error = std::string("unknown option '") + argv[optind - 1] + "'";
      return ParseResult::kError;
    }
    if (c == ':') {
      *error = std::string("option '") + argv[optind - 1] + "' needs a value";
      return ParseResult::kError;
    }
    if (isUnsupported(c)) {
      *error = "nccl-tests option " + flagName(c) + " is not supported by coll";
      return ParseResult::kError;
    }
    if (!applyFlag(c, optarg, options, error)) return ParseResult::kError;
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return ParseResult::kError;
  }
  return validate(*options, error) ? ParseResult::kRun : ParseResult::kError;
}

std::string perfUsage(const char* program) {
  return std::string("USAGE: ") + program +
         "\n\t[-b,--minbytes <min size in bytes, K/M/G suffixes>] (default 32M)"
         "\n\t[-e,--maxbytes <max size in bytes>] (default 32M)"
         "\n\t[-i,--stepbytes <increment size>] (default 1M)"
         "\n\t[-f,--stepfactor <increment factor>] (default 1: use -i)"
         "\n\t[-n,--iters <iteration count>] (default 20)"
         "\n\t[-m,--agg_iters <ops per iteration>] (default 1)"
         "\n\t[-w,--warmup_iters <warmup iteration count>] (default 5)"
         "\n\t[-c,--check <check iteration count>] (default 1; 0 disables the check)"
         "\n\t[-o,--op <sum/prod/min/max/avg/all>] (default sum)"
         "\n\t[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16"
         "/all>] (default float)"
         "\n\t[-r,--root <root rank/all>] (default 0)"
         "\n\t[-z,--blocking <0/1/2> 1: wait and barrier after each op, 2: wait only]"
         "\n\t[-T,--timeout <seconds> abort when an op takes longer] (default 0: none)"
         "\n\t[-C,--report_cputime <0/1> report the time to issue ops]"
         "\n\t[-a,--average <0/1/2/3> report time over ranks <0=RANK0/1=AVG/2=MIN/3=MAX>]"
         " (default 1)"
         "\n\t[-J,--output_file,--json <file> also write one JSON object per result line]"
         "\n\t[-Q,--compare_algos <\"auto ring tree ...\"> time these algorithms side by side in this job, out of"
         " place: a row each, named at its end] (default: none)"
         "\n\t[-j,--algo_rounds <n> interleaved rounds of -Q, the median reported] (default 3)"
         "\n\t[-X,--device_buffers <0/1> 1: buffers in GPU memory (CUDA build), and the header gives the"
         " GPU's copy bandwidth] (default 0: host memory)"
         "\n\t[-R,--local_register <0/1> 1: host buffers from collMemAlloc, which ranks on the same host read"
         " with one plain copy] (default 0: aligned_alloc)"
         "\n\t[-K,--latency_stats <0/1> 1: wait for each timed op, and add per cell the median and 99th"
         " percentile of the per-op times (all ranks' pooled, us) and the CPU-seconds all ranks spent per GB"
         " of buffer (user + system)] (default 0)"
         "\n\t[-t,--nthreads 1] [-g,--ngpus 1] [-G,--cudagraph 0] [-y,--stream_null 0]"
         " [-p,--parallel_init 0/1]: accepted for compatibility, other values refused"
         "\n\t[-h,--help]\n";
}

std::vector<size_t> sweepSizes(const PerfOptions& o) {
  std::vector<size_t> sizes;
  size_t size = o.minBytes;
  while (size <= o.maxBytes) {
    sizes.push_back(size);
    size_t next = o.stepFactor > 1 ? size * o.stepFactor : size + o.stepBytes;
    bool overflowed = o.stepFactor > 1 ? next / o.stepFactor != size : next < size;
    if (overflowed) break;
    size = next;
  }
  return sizes;
}

}  // namespace coll::bench
