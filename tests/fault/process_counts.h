// What a rank holds from the kernel, for the fault tests' leak checks: a survivor must hold as
// many descriptors and threads after destroying its failed communicator as before creating it.
#pragma once

namespace coll::test {

int countOpenFds();  // entries of /proc/self/fd, less the one the count itself opens
int countThreads();  // entries of /proc/self/task

// countThreads() once it is at most `expected`, or after 2 s. pthread_join returns once the
// kernel clears the thread's id, a moment before the task leaves /proc/self/task; a thread that
// was never joined is still there after the wait.
int settledThreadCount(int expected);

}  // namespace coll::test
