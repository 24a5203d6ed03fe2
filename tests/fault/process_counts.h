// What a rank holds from the kernel, for the fault tests' leak checks: a survivor must hold as
// many descriptors and threads after destroying its failed communicator as before creating it.
#pragma once

namespace coll::test {

int countOpenFds();  // entries of /proc/self/fd, less the one the count itself opens
int countThreads();  // entries of /proc/self/task

}  // namespace coll::test
