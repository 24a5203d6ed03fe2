// Link rates in tc's syntax, as netcluster and `tc qdisc ... rate` take them: "1gbit",
// "500mbit", "100gbit", "10kbit", "800bit" (bits per second, SI prefixes), "1gbps" (bytes per
// second), and the binary forms "1gibit" / "1gibps". A plain number is bits per second.
#pragma once

#include <string>

namespace coll::sim {

// Bytes per second; false (and *error set) on anything else, or a rate that is not > 0.
bool parseRate(const std::string& text, double* bytes_per_second, std::string* error);

// "1gbit" style, for headers: the largest SI unit that keeps the number >= 1.
std::string formatRate(double bytes_per_second);

}  // namespace coll::sim
