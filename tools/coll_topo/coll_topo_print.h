// coll-topo's output: a Topology as a readable table, and what the selector's cost model
// would choose per collective and size (--explain).
#pragma once

#include <cstddef>
#include <string>

#include "topology/topology.h"

namespace coll::tools {

std::string topologyTable(const topology::Topology& t);
// One table per collective that has several algorithms: rows are sizes from 8 B
// (factor 4, to 128 MiB), columns each candidate's predicted time, the chosen one marked with '*'.
std::string explainTable(const topology::Topology& t, size_t slice_bytes);

}  // namespace coll::tools
