// Slurm's compressed host lists ("node[01-04,07],gpu3").
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace coll::bootstrap {

// Expands a host list; zero padding of ranges is kept ("n[08-10]" -> n08 n09 n10).
Status expandHostList(const std::string& list, std::vector<std::string>* hosts);
Status firstHostOfList(const std::string& list, std::string* host);

}  // namespace coll::bootstrap
