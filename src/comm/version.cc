// The library's version and the header check at init: a program compiled against one major
// version of coll's headers and run with another's library is refused before anything starts,
// naming both versions and the library file, instead of failing later in ways nobody can read.
#include <dlfcn.h>

#include <string>

#include "base/log.h"
#include "coll/coll.h"
#include "comm/c_api_error.h"

namespace {

std::string versionText(int code) {
  return coll::format("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
}

std::string libraryFile() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&collGetVersion), &info) && info.dli_fname) return info.dli_fname;
  return "linked statically";
}

// collSuccess when the headers the caller compiled against are of this library's major version.
collResult_t checkHeaderVersion(const char* call, int header_version) {
  if (header_version / 10000 == COLL_VERSION_MAJOR) return collSuccess;
  coll::capi::setLastError(coll::format(
      "%s: version mismatch: the program was compiled with coll %s's headers, but the library it loaded (%s) "
      "is coll %s, of another major version: rebuild the program against the installed headers, or run it "
      "with the library of its version",
      call, versionText(header_version).c_str(), libraryFile().c_str(), COLL_VERSION_STRING));
  return collUnsupported;
}

}  // namespace

collResult_t collGetVersion(int* version) {
  if (!version) {
    coll::capi::setLastError("collGetVersion: null version pointer");
    return collInvalidArgument;
  }
  *version = COLL_VERSION_CODE;
  return collSuccess;
}

collResult_t collCommInitRankVersioned(collComm_t* comm, int nranks, collUniqueId id, int rank, int header_version) {
  if (collResult_t r = checkHeaderVersion("collCommInitRank", header_version); r != collSuccess) return r;
  return (collCommInitRank)(comm, nranks, id, rank);
}

collResult_t collCommInitFromEnvVersioned(collComm_t* comm, int header_version) {
  if (collResult_t r = checkHeaderVersion("collCommInitFromEnv", header_version); r != collSuccess) return r;
  return (collCommInitFromEnv)(comm);
}
