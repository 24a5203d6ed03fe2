// What a hostile (or broken) rank does to its authenticated data connections, for the fault
// tests: it finds its own socket-transport streams among its descriptors and writes garbage
// into them or shuts them down. The library has no hook for this on purpose; the test reaches
// under it the way a corrupted peer would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::test {

// This process's connected TCP sockets whose remote end is not the store at store_port: the
// socket transport's data streams (the store client and the ledger responder talk to the store).
std::vector<int> dataSockets(int store_port);

// Bytes that do not start with the data magic ("CDM1"): a malformed message header.
std::string garbageHeader();
// A well-formed header announcing 2^62 bytes under a tag nobody posted.
std::string oversizedHeader();

// Writes bytes to every socket (best effort, blocking); returns how many took all of it.
int writeToAll(const std::vector<int>& fds, const std::string& bytes);
// shutdown(SHUT_RDWR) on every socket: the peers see the connection close mid-collective.
void shutDownAll(const std::vector<int>& fds);

}  // namespace coll::test
