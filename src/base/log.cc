#include "base/log.h"

#include <atomic>
#include <mutex>

namespace coll {
namespace {
std::atomic<int> g_rank{-1};

const char* levelName(LogLevel l) {
  switch (l) {
    case LogLevel::warn: return "WARN";
    case LogLevel::info: return "INFO";
    case LogLevel::trace: return "TRACE";
    default: return "";
  }
}
}  // namespace

bool logEnabled(LogLevel level, const char* subsystem) {
  const Config& c = Config::global();
  if (level > c.log_level) return false;
  if (c.log_subsystems.empty() || level == LogLevel::warn) return true;
  return c.log_subsystems.find(subsystem) != std::string::npos;
}

void setLogRank(int rank) { g_rank = rank; }

void logLine(LogLevel level, const char* subsystem, const std::string& text) {
  static std::mutex mu;  // keeps lines from different threads whole
  std::lock_guard<std::mutex> lock(mu);
  int rank = g_rank.load();
  if (rank >= 0)
    std::fprintf(stderr, "coll %s %s [rank %d] %s\n", levelName(level), subsystem, rank, text.c_str());
  else
    std::fprintf(stderr, "coll %s %s %s\n", levelName(level), subsystem, text.c_str());
}

std::string formatBytes(size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  if (u == 0) return format("%zu B", bytes);
  if (v == static_cast<double>(static_cast<long long>(v))) return format("%lld %s", static_cast<long long>(v), kUnits[u]);
  return format("%.1f %s", v, kUnits[u]);
}

}  // namespace coll
