// main() of the tests that fork ranks. Config::global() is parsed once per process, and the
// parent's rendezvous store already parses it, so the COLL_* defaults these tests rely on are
// set here, before any test runs (and before any fork). A variable the caller set wins.
//   COLL_TIMEOUT=30       every op and the init fail within 30 s instead of 5 minutes
//   COLL_SLICE_BYTES=4096 the smallest slice: counts of a few thousand elements span many
//                         slices, so pipelining and scratch-slot reuse are exercised cheaply
// A program may set its own defaults from a static initializer (see fault_test.cc): those run
// before main and so win over these. Arguments --env=NAME=VALUE set (overwrite) variables, so
// tests/CMakeLists.txt can register one program again under another configuration.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const char* eq = std::strncmp(argv[i], "--env=", 6) == 0 ? std::strchr(argv[i] + 6, '=') : nullptr;
    if (!eq) {
      argv[kept++] = argv[i];
      continue;
    }
    std::string name(argv[i] + 6, static_cast<size_t>(eq - (argv[i] + 6)));
    ::setenv(name.c_str(), eq + 1, 1);
  }
  argc = kept;
  argv[argc] = nullptr;
  ::setenv("COLL_TIMEOUT", "30", 0);
  ::setenv("COLL_SLICE_BYTES", "4096", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
