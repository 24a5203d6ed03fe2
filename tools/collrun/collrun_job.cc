#include "collrun_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "collrun_output.h"

namespace coll::collrun {
namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// From SIGTERM to SIGKILL: enough for a rank to flush its logs, not enough to hang a CI job.
constexpr auto kTermToKill = std::chrono::seconds(3);
// After the last rank exits, its pipes may still be held open by processes it left behind;
// their output is read for this long, then collrun stops waiting.
constexpr auto kDrainAfterExit = std::chrono::seconds(2);
// poll() wakes at least this often, so a lost SIGCHLD costs a delay, never a hang.
constexpr int kMaxPollMs = 1000;
constexpr int kTimeoutExitCode = 124;  // what timeout(1) returns
constexpr size_t kReadChunk = 64 * 1024;

// The self-pipe: handlers only write the signal number here; the main loop does the work,
// whichever thread (collrun's or the store's) the kernel delivered the signal to.
int gSignalPipe[2] = {-1, -1};

extern "C" void onSignal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t unused = ::write(gSignalPipe[1], &byte, 1);
  (void)unused;
  errno = saved;
}

bool installSignalHandlers() {
  if (::pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NOCLDSTOP;  // no SA_RESTART: poll() returns at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill collrun and orphan the ranks
  return true;
}

void report(const std::string& line) { writeAll(STDERR_FILENO, "collrun: " + line + "\n"); }

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string signalName(int sig) {
  const char* name = ::strsignal(sig);
  return "signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
}

class Job {
 public:
  explicit Job(const JobOptions& options) : options_(options) {}
  int run(const std::vector<SpawnSpec>& specs);

 private:
  bool spawnAll(const std::vector<SpawnSpec>& specs);
  void loop();
  void pollOnce(TimePoint now);
  int pollTimeoutMs(TimePoint now) const;
  void handleSignals();
  void readStream(size_t index, bool is_err);
  void reapChildren(TimePoint now);
  void onRankExit(const RankProcess& rank, TimePoint now);
  void applyDeadlines(TimePoint now);
  void terminateAll(TimePoint now);
  void signalRunning(int sig, bool by_policy);
  int runningCount() const;
  bool anyPipeOpen() const;
  int exitStatus() const;

  JobOptions options_;
  std::vector<RankProcess> ranks_;
  std::vector<LineForwarder> out_forwarders_;
  std::vector<LineForwarder> err_forwarders_;
  std::vector<char> read_buffer_ = std::vector<char>(kReadChunk);

  std::optional<TimePoint> job_deadline_;    // --timeout
  std::optional<TimePoint> term_at_;         // --kill-after, from the first failure
  std::optional<TimePoint> kill_at_;         // kTermToKill after SIGTERM
  std::optional<TimePoint> drain_deadline_;  // set once no rank is running
  bool timed_out_ = false;
  bool term_sent_ = false;
  bool kill_sent_ = false;
  bool spawn_failed_ = false;
  int user_signals_ = 0;
};

int Job::run(const std::vector<SpawnSpec>& specs) {
  if (!installSignalHandlers()) {
    report(std::string("cannot create the signal pipe: ") + std::strerror(errno));
    return 1;
  }
  TimePoint start = Clock::now();
  if (options_.timeout_s > 0) {
    job_deadline_ = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options_.timeout_s));
  }
  if (!spawnAll(specs)) terminateAll(Clock::now());
  loop();
  for (size_t i = 0; i < ranks_.size(); ++i) {
    RankProcess& rank = ranks_[i];
    out_forwarders_[i].finish();
    err_forwarders_[i].finish();
    if (rank.out_fd >= 0) ::close(rank.out_fd);
    if (rank.err_fd >= 0) ::close(rank.err_fd);
    rank.out_fd = rank.err_fd = -1;
  }
  return exitStatus();
}

bool Job::spawnAll(const std::vector<SpawnSpec>& specs) {
  ranks_.reserve(specs.size());
  for (const SpawnSpec& spec : specs) {
    RankProcess rank;
    Status st = spawnRank(spec, &rank);
    if (!st) {
      report("cannot start rank " + std::to_string(spec.rank) + ": " + st.message());
      spawn_failed_ = true;
      return false;
    }
    ranks_.push_back(rank);
    out_forwarders_.emplace_back(spec.rank, STDOUT_FILENO);
    err_forwarders_.emplace_back(spec.rank, STDERR_FILENO);
  }
  return true;
}

void Job::loop() {
  for (;;) {
    TimePoint now = Clock::now();
    if (runningCount() == 0) {
      if (!drain_deadline_) drain_deadline_ = now + kDrainAfterExit;
      if (!anyPipeOpen() || now >= *drain_deadline_) return;
    }
    pollOnce(now);
    now = Clock::now();
    reapChildren(now);
    applyDeadlines(now);
  }
}

void Job::pollOnce(TimePoint now) {
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, bool>> sources;  // (rank index, is stderr) per fds[i + 1]
  fds.push_back({gSignalPipe[0], POLLIN, 0});
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i].out_fd >= 0) {
      fds.push_back({ranks_[i].out_fd, POLLIN, 0});
      sources.emplace_back(i, false);
    }
    if (ranks_[i].err_fd >= 0) {
      fds.push_back({ranks_[i].err_fd, POLLIN, 0});
      sources.emplace_back(i, true);
    }
  }
  if (::poll(fds.data(), fds.size(), pollTimeoutMs(now)) <= 0) return;  // timeout or EINTR
  if (fds[0].revents != 0) handleSignals();
  for (size_t k = 1; k < fds.size(); ++k) {
    if (fds[k].revents != 0) readStream(sources[k - 1].first, sources[k - 1].second);
  }
}

int Job::pollTimeoutMs(TimePoint now) const {
  TimePoint next = now + std::chrono::milliseconds(kMaxPollMs);
  auto consider = [&](const std::optional<TimePoint>& t, bool pending) {
    if (t && pending) next = std::min(next, *t);
  };
  consider(job_deadline_, !timed_out_);
  consider(term_at_, !term_sent_);
  consider(kill_at_, !kill_sent_);
  consider(drain_deadline_, true);
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now);
  return static_cast<int>(std::max<int64_t>(0, wait.count()));
}

void Job::handleSignals() {
  unsigned char sigs[64];
  ssize_t n;
  while ((n = ::read(gSignalPipe[0], sigs, sizeof sigs)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      int sig = sigs[i];
      if (sig == SIGCHLD) continue;  // the caller reaps after every poll
      if (++user_signals_ == 1) {
        report("received " + signalName(sig) + "; forwarding it to every rank");
        signalRunning(sig, false);
      } else if (!kill_sent_) {
        report("received " + signalName(sig) + " again; killing every rank");
        kill_sent_ = true;
        signalRunning(SIGKILL, true);
      }
    }
  }
}

void Job::readStream(size_t index, bool is_err) {
  RankProcess& rank = ranks_[index];
  int& fd = is_err ? rank.err_fd : rank.out_fd;
  LineForwarder& forwarder = is_err ? err_forwarders_[index] : out_forwarders_[index];
  ssize_t n = ::read(fd, read_buffer_.data(), read_buffer_.size());
  if (n > 0) {
    forwarder.feed(read_buffer_.data(), static_cast<size_t>(n));
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  forwarder.finish();  // EOF, or an error that will not go away
  ::close(fd);
  fd = -1;
}

// Reaps everything first and reports after, so the reports count the survivors right.
void Job::reapChildren(TimePoint now) {
  std::vector<size_t> exited;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    RankProcess& rank = ranks_[i];
    if (!rank.running) continue;
    int status = 0;
    pid_t pid = ::waitpid(rank.pid, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) continue;
    rank.running = false;
    // ECHILD means someone else reaped it; all that is known is that it is gone.
    rank.wait_status = pid == rank.pid ? status : (255 << 8);
    exited.push_back(i);
  }
  for (size_t i : exited) onRankExit(ranks_[i], now);
}

void Job::onRankExit(const RankProcess& rank, TimePoint now) {
  if (exitCodeOf(rank.wait_status) == 0) return;
  // Once collrun is terminating the job, the ranks' ends are its own doing and were
  // announced as one line; a line per rank would bury the failure that started it.
  if (rank.terminated_by_us || term_sent_) return;
  report("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) + ") " +
         describeExit(rank.wait_status));
  int remaining = runningCount();
  if (options_.kill_after_s <= 0 || term_at_ || remaining == 0) return;
  term_at_ = now + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(options_.kill_after_s));
  report("terminating the " + std::to_string(remaining) + " remaining rank(s) in " +
         seconds(options_.kill_after_s) + " s unless they exit (--kill-after)");
}

void Job::applyDeadlines(TimePoint now) {
  if (runningCount() == 0) return;
  if (job_deadline_ && !timed_out_ && now >= *job_deadline_) {
    timed_out_ = true;
    report("job exceeded --timeout " + seconds(options_.timeout_s) + " s");
    terminateAll(now);
  }
  if (term_at_ && !term_sent_ && now >= *term_at_) terminateAll(now);
  if (kill_at_ && !kill_sent_ && now >= *kill_at_) {
    kill_sent_ = true;
    report("sending SIGKILL to the " + std::to_string(runningCount()) +
           " rank(s) still running");
    signalRunning(SIGKILL, true);
  }
}

void Job::terminateAll(TimePoint now) {
  if (term_sent_) return;
  term_sent_ = true;
  kill_at_ = now + kTermToKill;
  int remaining = runningCount();
  if (remaining == 0) return;
  report("sending SIGTERM to the " + std::to_string(remaining) + " rank(s) still running");
  signalRunning(SIGTERM, true);
}

// Signals each running rank's process group, so that whatever the rank started (a shell's
// children, say) goes too; only ranks not yet reaped, whose group id cannot be reused.
void Job::signalRunning(int sig, bool by_policy) {
  for (RankProcess& rank : ranks_) {
    if (!rank.running) continue;
    if (::kill(-rank.pid, sig) != 0) ::kill(rank.pid, sig);
    if (by_policy) rank.terminated_by_us = true;
  }
}

int Job::runningCount() const {
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const RankProcess& r) { return r.running; }));
}

bool Job::anyPipeOpen() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const RankProcess& r) { return r.out_fd >= 0 || r.err_fd >= 0; });
}

int Job::exitStatus() const {
  int worst = 0;
  for (const RankProcess& rank : ranks_) worst = std::max(worst, exitCodeOf(rank.wait_status));
  if (timed_out_) worst = std::max(worst, kTimeoutExitCode);
  if (spawn_failed_) worst = std::max(worst, 1);
  return worst;
}

}  // namespace

int runJob(const std::vector<SpawnSpec>& specs, const JobOptions& options) {
  Job job(options);
  return job.run(specs);
}

}  // namespace coll::collrun
