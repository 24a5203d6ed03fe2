#include "rate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace coll::sim {
namespace {

struct Unit {
  const char* suffix;
  double bits;  // bits per second of one unit
};

// Longest suffixes first, so "gbps" is not read as "bps" after a "g".
constexpr Unit kUnits[] = {
    {"tibit", 1099511627776.0}, {"gibit", 1073741824.0}, {"mibit", 1048576.0}, {"kibit", 1024.0},
    {"tibps", 8 * 1099511627776.0},       {"gibps", 8 * 1073741824.0}, {"mibps", 8 * 1048576.0}, {"kibps", 8 * 1024.0},
    {"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3},
    {"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3},
    {"bit", 1}, {"bps", 8}, {"", 1},
};

}  // namespace

bool parseRate(const std::string& text, double* bytes_per_second, std::string* error) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) {
    *error = "rate \"" + text + "\" does not start with a number (tc syntax: 1gbit, 500mbit, 100gbit)";
    return false;
  }
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Unit& u : kUnits) {
    if (suffix != u.suffix) continue;
    const double bps = value * u.bits / 8;
    if (!(bps > 0) || !std::isfinite(bps)) {
      *error = "rate \"" + text + "\" must be greater than zero";
      return false;
    }
    *bytes_per_second = bps;
    return true;
  }
  *error = "rate \"" + text + "\": unknown unit \"" + suffix + "\" (tc syntax: bit, kbit, mbit, gbit, tbit, bps, ...)";
  return false;
}

std::string formatRate(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  const char* units[] = {"bit", "kbit", "mbit", "gbit", "tbit"};
  int u = 0;
  double v = bits;
  while (u < 4 && v >= 1000) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%s", std::round(v * 100) / 100, units[u]);
  return buf;
}

}  // namespace coll::sim
