// What a rank killed during start-up leaves in /dev/shm is removed by the next job on the host
// (src/transport/shm/stale_segments.h). A child makes a segment as the shared-memory transport
// does (created with the owner's lock held, then its header) and is killed before removing its name,
// as ranks killed before the set-up barrier are; a 2-rank job then starts, and its lowest rank
// removes the segment while a live process's stays.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "multirank/rank_runner.h"
#include "transport/shm/layout.h"
#include "transport/shm/segment.h"
#include "transport/shm/stale_segments.h"

namespace coll::test {
namespace {

namespace shm = transport::shm;

// Makes /dev/shm<name> with a header owned by the calling process.
void makeSegment(const std::string& name) {
  static shm::Mapping mapping;  // kept: it holds the owner's lock
  Status st = shm::createSegment(name, shm::Geometry{4096, 2, 1}, 2, &mapping);
  if (!st) {
    std::fprintf(stderr, "createSegment: %s\n", st.message().c_str());
    ::_exit(2);
  }
  auto* h = new (mapping.base()) shm::SegmentHeader();
  h->magic = shm::kSegmentMagic;
  h->version = shm::kLayoutVersion;
  h->owner_rank = 5;
  h->owner_pid = static_cast<int32_t>(::getpid());
}

TEST(StartupLeak, TheNextJobRemovesSegmentsOfRanksKilledBeforeRemovingThem) {
  const std::string dead = "/coll-startup-leak-dead-" + std::to_string(::getpid());
  const std::string live = "/coll-startup-leak-live-" + std::to_string(::getpid());
  pid_t child = ::fork();
  if (child == 0) {
    makeSegment(dead);
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  makeSegment(live);  // this process lives on: its segment must stay
  const std::filesystem::path dev("/dev/shm");
  ASSERT_TRUE(std::filesystem::exists(dev / dead.substr(1))) << "the killed child left its segment";

  auto outcomes = runRanks(2, [](Communicator& comm, Rank&) {
    float x = 1;
    comm.allreduce(&x, &x, 1, DataType::f32, ReduceOp::sum).wait();
    RANK_CHECK(x == 2, "allreduce gave %f", x);
  });
  expectAllSucceeded(outcomes);
  EXPECT_FALSE(std::filesystem::exists(dev / dead.substr(1))) << "the next job's start-up removed it";
  EXPECT_TRUE(std::filesystem::exists(dev / live.substr(1))) << "a live owner's segment stays";
  shm::unlinkSegment(live);
}

}  // namespace
}  // namespace coll::test
