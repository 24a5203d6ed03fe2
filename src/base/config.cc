#include "base/config.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace coll {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// The problems of the parse in progress on this thread (Config::fromEnvironment collects them).
thread_local std::vector<std::string>* t_problems = nullptr;

void complain(const char* name, const char* value, const std::string& expected) {
  std::string problem = std::string(name) + "=" + value + ": expected " + expected;
  if (t_problems) t_problems->push_back(problem);
}

// Accepts plain numbers and K/M/G suffixes (powers of two), as nccl-tests does.
bool parseBytes(const char* s, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || !(v >= 0)) return false;  // NaN too
  double mult = 1;
  switch (*end) {
    case 'k': case 'K': mult = 1024.0; ++end; break;
    case 'm': case 'M': mult = 1024.0 * 1024; ++end; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  // 2^64 and above (or inf) would be undefined to convert.
  if (*end != '\0' || !(v * mult < 18446744073709551616.0)) return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

void readInt(const char* name, int lo, int hi, int* field) {
  const char* v = env(name);
  if (!v) return;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi)
    return complain(name, v, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  *field = static_cast<int>(x);
}

void readBytes(const char* name, size_t lo, size_t hi, size_t* field) {
  const char* v = env(name);
  if (!v) return;
  size_t x;
  if (!parseBytes(v, &x) || x < lo || x > hi)
    return complain(name, v, "a byte count (like 512K) from " + std::to_string(lo) + " to " + std::to_string(hi) + " bytes");
  *field = x;
}

void readString(const char* name, std::string* field) {
  if (const char* v = env(name)) *field = v;
}

void readTimeout(Config* c) {
  const char* v = env("COLL_TIMEOUT");
  if (!v) return;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  // A year at most: beyond, the conversion to milliseconds would overflow.
  if (*end != '\0' || !(s > 0) || s > 365.0 * 24 * 3600) return complain("COLL_TIMEOUT", v, "seconds > 0, at most a year");
  c->timeout = std::chrono::milliseconds(static_cast<long long>(s * 1000));
}

void readLogLevel(Config* c) {
  const char* v = env("COLL_DEBUG");
  if (!v) return;
  std::string_view s(v);
  if (s == "NONE" || s == "none") c->log_level = LogLevel::none;
  else if (s == "WARN" || s == "warn") c->log_level = LogLevel::warn;
  else if (s == "INFO" || s == "info") c->log_level = LogLevel::info;
  else if (s == "TRACE" || s == "trace") c->log_level = LogLevel::trace;
  else complain("COLL_DEBUG", v, "NONE, WARN, INFO or TRACE");
}

void readBucketMb(Config* c) {
  const char* v = env("COLL_BUCKET_MB");
  if (!v) return;
  char* end = nullptr;
  double mb = std::strtod(v, &end);
  if (*end != '\0' || !(mb > 0) || mb > 1 << 20) return complain("COLL_BUCKET_MB", v, "MiB > 0, e.g. 25 or 0.5");
  c->bucket_bytes = static_cast<size_t>(mb * 1024 * 1024);
}

}  // namespace

Config Config::fromEnvironment() {
  Config c;
  t_problems = &c.problems;
  readTimeout(&c);
  readLogLevel(&c);
  readString("COLL_DEBUG_SUBSYS", &c.log_subsystems);
  readInt("COLL_SOCKET_NSTREAMS", 1, 64, &c.socket_nstreams);
  c.socket_nstreams_auto = env("COLL_SOCKET_NSTREAMS") == nullptr;
  readString("COLL_SOCKET_IFNAME", &c.socket_ifname);
  size_t buf = c.socket_buffer_bytes;
  readBytes("COLL_SOCKET_BUFFER", 0, 1ull << 30, &buf);
  c.socket_buffer_bytes = static_cast<int>(buf);
  readBytes("COLL_SLICE_BYTES", 4096, 1ull << 30, &c.slice_bytes);
  c.slice_bytes_auto = env("COLL_SLICE_BYTES") == nullptr;
  readBytes("COLL_SOCKET_WAKE_BYTES", 0, 1ull << 30, &c.socket_wake_bytes);
  int relay = 1;
  readInt("COLL_SOCKET_RELAY", 0, 1, &relay);
  c.socket_relay = relay == 1;
  readInt("COLL_PIPELINE_DEPTH", 1, 1024, &c.pipeline_depth);
  readString("COLL_JOB_SECRET", &c.job_secret);
  readString("COLL_ALGO", &c.algo);
  readString("COLL_TRANSPORT", &c.transport);
  readString("COLL_NET", &c.net);
  readString("COLL_HOST_ID", &c.host_id);
  readBytes("COLL_SHM_SLOT_BYTES", 4096, 64ull << 20, &c.shm_slot_bytes);
  readInt("COLL_SHM_NSLOTS", 2, 4096, &c.shm_nslots);
  readBytes("COLL_P2P_EAGER_BUDGET", 0, 1ull << 40, &c.p2p_eager_budget);
  readBytes("COLL_STREAM_BYTES", 0, 1ull << 62, &c.stream_bytes);
  readBytes("COLL_SHM_CMA_THRESHOLD", 0, 1ull << 40, &c.shm_cma_threshold);
  c.shm_cma_auto = env("COLL_SHM_CMA_THRESHOLD") == nullptr;
  readBytes("COLL_SHM_BOARD_BYTES", 0, 4096, &c.shm_board_bytes);
  readInt("COLL_SHM_SPIN", 0, 1'000'000, &c.shm_spin_us);
  c.shm_spin_auto = env("COLL_SHM_SPIN") == nullptr;
  readInt("COLL_SOCKET_SPIN", 0, 1'000'000, &c.socket_spin_us);
  int cuda_ipc = 1;
  readInt("COLL_CUDA_IPC", 0, 1, &cuda_ipc);
  c.cuda_ipc = cuda_ipc == 1;
  readBytes("COLL_CUDA_STAGING_CHUNK", 4096, 1ull << 30, &c.cuda_staging_chunk);
  int inline_ops = 1;
  readInt("COLL_INLINE", 0, 1, &inline_ops);
  c.inline_ops = inline_ops == 1;
  int check = 0;
  readInt("COLL_CHECK", 0, 1, &check);
  c.check = check == 1;
  int deterministic = 0;
  readInt("COLL_DETERMINISTIC", 0, 1, &deterministic);
  c.deterministic = deterministic == 1;
  readBucketMb(&c);
  int probe = 1, tune = 0;
  readInt("COLL_PROBE", 0, 1, &probe);
  c.probe = probe == 1;
  readString("COLL_TOPO_FILE", &c.topo_file);
  readString("COLL_TOPO_DUMP_FILE", &c.topo_dump_file);
  readString("COLL_TRACE_FILE", &c.trace_file);
  readInt("COLL_TUNE", 0, 1, &tune);
  c.tune = tune == 1;
  readString("COLL_TUNE_FILE", &c.tune_file);
  readInt("COLL_LAUNCHER_FD", 3, 1 << 20, &c.launcher_fd);
  t_problems = nullptr;
  return c;
}

const Config& Config::global() {
  static const Config config = fromEnvironment();
  return config;
}

}  // namespace coll
