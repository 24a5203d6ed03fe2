/* coll's version: the single source of it (CMakeLists.txt reads it from here). The shared
 * library's SONAME carries the major version (libcoll.so.0); collGetVersion returns the
 * library's COLL_VERSION_CODE, and collCommInitRank refuses headers of another major version. */
#ifndef COLL_VERSION_H_
#define COLL_VERSION_H_

#define COLL_VERSION_MAJOR 0
#define COLL_VERSION_MINOR 1
#define COLL_VERSION_PATCH 0
#define COLL_VERSION_STRING "0.1.0"

/* As NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch. */
#define COLL_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define COLL_VERSION_CODE COLL_VERSION(COLL_VERSION_MAJOR, COLL_VERSION_MINOR, COLL_VERSION_PATCH)

#endif /* COLL_VERSION_H_ */
