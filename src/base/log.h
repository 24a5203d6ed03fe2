// Logging tagged by subsystem (INIT, NET, STORE, ALGO, ...), filtered by COLL_DEBUG.
// Lines look like: "coll INFO NET [rank 2] data interface eth0 (10.213.0.3): reaches the store".
#pragma once

#include <cstdio>
#include <string>

#include "base/config.h"
#include "base/warn_limiter.h"

namespace coll {

bool logEnabled(LogLevel level, const char* subsystem);
void logLine(LogLevel level, const char* subsystem, const std::string& text);

// The rank shown in this process's log lines (-1: not yet known).
void setLogRank(int rank);

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(static_cast<size_t>(n > 0 ? n : 0), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

// "64 MiB", "1.5 KiB", "8 B"
std::string formatBytes(size_t bytes);

}  // namespace coll

#define COLL_LOG(level, subsys, ...)                                              \
  do {                                                                            \
    if (::coll::logEnabled(::coll::LogLevel::level, subsys))                     \
      ::coll::logLine(::coll::LogLevel::level, subsys, ::coll::format(__VA_ARGS__)); \
  } while (0)
// Warnings are rate-limited per call site (base/warn_limiter.h).
#define COLL_WARN(subsys, ...)                                                              \
  do {                                                                                      \
    if (::coll::logEnabled(::coll::LogLevel::warn, subsys)) {                              \
      static ::coll::WarnLimiter coll_warn_limiter_;                                       \
      uint64_t coll_left_out_ = 0;                                                         \
      if (coll_warn_limiter_.admit(::coll::WarnLimiter::Clock::now(), &coll_left_out_))    \
        ::coll::logLine(::coll::LogLevel::warn, subsys,                                    \
                        ::coll::withLeftOut(::coll::format(__VA_ARGS__), coll_left_out_)); \
    }                                                                                       \
  } while (0)
#define COLL_INFO(subsys, ...) COLL_LOG(info, subsys, __VA_ARGS__)
#define COLL_TRACE(subsys, ...) COLL_LOG(trace, subsys, __VA_ARGS__)
