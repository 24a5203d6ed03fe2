// Slurm's compressed host lists ("node[01-04,07],gpu3").
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace coll::bootstrap {

// The most hosts a list may expand to: a list is read from the environment, and a few short
// ranges ("a[0-99999],b[0-99999],...") would otherwise allocate without bound.
inline constexpr size_t kMaxHostListHosts = 100000;

// Expands a host list, refusing (InvalidArgument) one longer than kMaxHostListHosts; zero padding of ranges is kept ("n[08-10]" -> n08 n09 n10).
Status expandHostList(const std::string& list, std::vector<std::string>* hosts);
Status firstHostOfList(const std::string& list, std::string* host);

}  // namespace coll::bootstrap
