// coll-topo: prints a job's topology (hosts, ranks, NUMA, NICs, GPUs, measured links).
//
//   build/bin/collrun -n 4 build/bin/coll-topo [--json]     the job's own topology (any launcher)
//   build/bin/coll-topo --load FILE [--json] [--explain]    a saved one (COLL_TOPO_DUMP_FILE)
//
// --explain adds, per collective with several algorithms, each one's predicted time from 8 B
// to 128 MiB and which the selector would choose. Exit status: 0, or 1 with a message.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "coll/communicator.h"
#include "coll/error.h"
#include "coll_topo_print.h"
#include "base/config.h"
#include "topology/topology.h"

namespace {

struct Args {
  bool json = false;
  bool explain = false;
  std::string load;
};

bool parseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") args->json = true;
    else if (a == "--explain") args->explain = true;
    else if (a == "--load" && i + 1 < argc) args->load = argv[++i];
    else return false;
  }
  return true;
}

// The job's topology as every rank agreed on it: the communicator's init writes it where
// COLL_TOPO_DUMP_FILE says (rank 0, before the init barrier), so it exists once init returns.
// The variable is set here, before anything reads the configuration, as a launcher would.
int fromJob(std::string* path) {
  const char* given = std::getenv("COLL_TOPO_DUMP_FILE");
  *path = given && *given ? given : "/tmp/coll-topo-" + std::to_string(::getpid()) + ".json";
  if (!given || !*given) ::setenv("COLL_TOPO_DUMP_FILE", path->c_str(), 1);
  auto comm = coll::Communicator::fromEnvironment();
  return comm->rank();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parseArgs(argc, argv, &args)) {
    std::fprintf(stderr, "usage: coll-topo [--json] | coll-topo --load FILE [--json] [--explain]\n");
    return 1;
  }
  std::string path = args.load;
  bool temporary = false;
  try {
    if (path.empty()) {
      temporary = std::getenv("COLL_TOPO_DUMP_FILE") == nullptr;
      if (fromJob(&path) != 0) return 0;  // rank 0 prints for the job
    }
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "coll-topo: %s\n", e.what());
    return 1;
  }
  coll::topology::Topology topo;
  coll::Status st = coll::topology::loadTopologyFile(path, &topo);
  if (temporary) ::unlink(path.c_str());
  if (!st) {
    std::fprintf(stderr, "coll-topo: %s\n", st.message().c_str());
    return 1;
  }
  if (args.json) std::printf("%s\n", coll::topology::toJson(topo).dump(2).c_str());
  else std::printf("%s", coll::tools::topologyTable(topo).c_str());
  if (args.explain) std::printf("%s", coll::tools::explainTable(topo, coll::Config::global().slice_bytes).c_str());
  return 0;
}
