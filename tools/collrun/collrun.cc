// collrun: coll's launcher for one machine, a small mpirun.
//
//   collrun -n N [options] [--] prog args...
//
// Serves the rendezvous store itself, starts N copies of prog with COLL_RANK and friends set,
// tags their output with the rank, forwards signals, and applies mpirun's failure policy
// (see collrun_job.h). Exits with the worst status of any rank.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/store.h"
#include "collrun_job.h"
#include "collrun_output.h"
#include "collrun_placement.h"
#include "collrun_spawn.h"
#include "base/status.h"

extern char** environ;

namespace coll::collrun {
namespace {

constexpr int kMaxRanks = 1024;
constexpr int kUsageExitCode = 2;
constexpr const char* kStoreHost = "127.0.0.1";

struct Options {
  int np = 0;
  bool prefix = true;
  bool help = false;
  JobOptions job;
  std::string bind_to = "auto";  // or core, none (collrun_placement.h)
  std::vector<std::string> command;
};

constexpr const char* kUsage =
    "usage: collrun -n N [options] [--] prog [args...]\n"
    "\n"
    "Starts N ranks of prog on this machine for coll, serving their rendezvous store.\n"
    "\n"
    "options:\n"
    "  -n, --np N            number of ranks, 1-1024 (required)\n"
    "  --no-prefix           pass output through as is, without the \"[rank] \" tag\n"
    "  --kill-after SECONDS  after a rank fails, terminate the others this much later\n"
    "                        (SIGTERM, then SIGKILL 3 s on); 0 = never (default 10)\n"
    "  --timeout SECONDS     terminate the job after this long; 0 = none (default 0)\n"
    "  --bind-to auto|core|none  pin rank r to CPU r mod n of the n collrun may run on:\n"
    "                        auto (the default) does where those CPUs are idle and says\n"
    "                        so; core always; none never\n"
    "  -h, --help            show this help\n"
    "Options end at the first non-option or at \"--\".\n"
    "\n"
    "Each rank gets collrun's environment plus:\n"
    "  COLL_RANK             its rank, 0..N-1\n"
    "  COLL_WORLD_SIZE       N\n"
    "  COLL_LOCAL_RANK       its rank (every rank is on this machine)\n"
    "  COLL_LOCAL_SIZE       N\n"
    "  COLL_STORE_ADDR       127.0.0.1:PORT, the store collrun serves\n"
    "  COLL_JOB_SECRET       the job secret: collrun's COLL_JOB_SECRET if set, else a fresh one\n"
    "\n"
    "Output: each line a rank writes to stdout or stderr goes to collrun's stdout or stderr\n"
    "prefixed with \"[rank] \". Rank 0 reads collrun's stdin unless it is a terminal; the\n"
    "others read /dev/null. SIGINT, SIGTERM and SIGHUP are forwarded to every rank; a second\n"
    "one kills them.\n"
    "\n"
    "Exit status: 0 if every rank succeeded, else the largest rank status (128+S for a rank\n"
    "killed by signal S), at least 124 if --timeout expired; 127 if prog cannot be executed.\n";

Status parseCount(std::string_view flag, const std::string& text, int* out) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > kMaxRanks) {
    return invalidArgument(std::string(flag) + " wants a number of ranks from 1 to " +
                           std::to_string(kMaxRanks) + ", not '" + text + "'");
  }
  *out = static_cast<int>(value);
  return Status::ok();
}

Status parseSeconds(std::string_view flag, const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value < 0) {
    return invalidArgument(std::string(flag) + " wants a number of seconds >= 0, not '" +
                           text + "'");
  }
  *out = value;
  return Status::ok();
}

// Splits "--flag=value" and fetches the value of "--flag value"; *i moves past what it used.
Status takeValue(const std::vector<std::string>& args, size_t* i, std::string_view flag,
                 std::string* value) {
  const std::string& arg = args[*i];
  if (arg.size() > flag.size() && arg[flag.size()] == '=') {
    *value = arg.substr(flag.size() + 1);
    return Status::ok();
  }
  if (*i + 1 >= args.size()) return invalidArgument(std::string(flag) + " needs a value");
  *value = args[++*i];
  return Status::ok();
}

bool isFlag(const std::string& arg, std::string_view flag) {
  return arg == flag || (arg.size() > flag.size() && arg.compare(0, flag.size(), flag) == 0 &&
                         arg[flag.size()] == '=');
}

// One option at args[*i]; *i moves past its value.
Status parseOption(const std::vector<std::string>& args, size_t* i, Options* options) {
  const std::string& arg = args[*i];
  std::string value;
  if (arg == "-h" || arg == "--help") {
    options->help = true;
  } else if (arg == "--no-prefix") {
    options->prefix = false;
  } else if (arg == "-n" || arg == "-np" || isFlag(arg, "--np")) {
    std::string_view flag = arg == "-n" || arg == "-np" ? std::string_view(arg) : "--np";
    COLL_RETURN_IF_ERROR(takeValue(args, i, flag, &value));
    COLL_RETURN_IF_ERROR(parseCount(flag, value, &options->np));
  } else if (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] != 'p') {
    COLL_RETURN_IF_ERROR(parseCount("-n", arg.substr(2), &options->np));  // -n4
  } else if (isFlag(arg, "--kill-after")) {
    COLL_RETURN_IF_ERROR(takeValue(args, i, "--kill-after", &value));
    COLL_RETURN_IF_ERROR(parseSeconds("--kill-after", value, &options->job.kill_after_s));
  } else if (isFlag(arg, "--bind-to")) {
    COLL_RETURN_IF_ERROR(takeValue(args, i, "--bind-to", &value));
    if (value != "auto" && value != "core" && value != "none")
      return invalidArgument("--bind-to takes auto, core or none, not '" + value + "'");
    options->bind_to = value;
  } else if (isFlag(arg, "--timeout")) {
    COLL_RETURN_IF_ERROR(takeValue(args, i, "--timeout", &value));
    COLL_RETURN_IF_ERROR(parseSeconds("--timeout", value, &options->job.timeout_s));
  } else {
    return invalidArgument("unknown option '" + arg + "' (see collrun --help)");
  }
  return Status::ok();
}

Status parseArgs(int argc, char** argv, Options* options) {
  std::vector<std::string> args(argv + 1, argv + argc);
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the program; "-" alone is one too
    COLL_RETURN_IF_ERROR(parseOption(args, &i, options));
    if (options->help) return Status::ok();
  }
  options->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options->np == 0) return invalidArgument("-n N is required (see collrun --help)");
  if (options->command.empty()) return invalidArgument("no program to run (see collrun --help)");
  return Status::ok();
}

bool isLaunchVariable(std::string_view entry) {
  for (const char* name : {bootstrap::kEnvRank, bootstrap::kEnvWorldSize, bootstrap::kEnvLocalRank,
                           bootstrap::kEnvLocalSize, bootstrap::kEnvStoreAddr,
                           bootstrap::kEnvJobSecret, bootstrap::kEnvLauncherFd}) {
    std::string_view n(name);
    if (entry.size() > n.size() && entry.compare(0, n.size(), n) == 0 && entry[n.size()] == '=') {
      return true;
    }
  }
  return false;
}

// collrun's environment without the variables it sets, so that a collrun started from inside
// another job's rank does not hand its ranks two different COLL_RANKs.
std::vector<std::string> inheritedEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!isLaunchVariable(*e)) env.emplace_back(*e);
  }
  return env;
}

std::vector<SpawnSpec> makeSpecs(const Options& options, const std::string& store_address,
                                 const std::string& secret, int lifeline_fd) {
  Placement placement = choosePlacement(options.bind_to, options.np);
  if (!placement.note.empty()) writeAll(STDERR_FILENO, placement.note + "\n");
  const std::vector<int>& cpus = placement.cpu_of_rank;
  std::vector<std::string> base = inheritedEnvironment();
  std::string n = std::to_string(options.np);
  bool stdin_is_terminal = ::isatty(STDIN_FILENO) != 0;
  std::vector<SpawnSpec> specs(options.np);
  for (int r = 0; r < options.np; ++r) {
    SpawnSpec& spec = specs[r];
    std::string rank = std::to_string(r);
    spec.rank = r;
    spec.argv = options.command;
    spec.env = base;
    spec.env.push_back(std::string(bootstrap::kEnvRank) + "=" + rank);
    spec.env.push_back(std::string(bootstrap::kEnvWorldSize) + "=" + n);
    spec.env.push_back(std::string(bootstrap::kEnvLocalRank) + "=" + rank);
    spec.env.push_back(std::string(bootstrap::kEnvLocalSize) + "=" + n);
    spec.env.push_back(std::string(bootstrap::kEnvStoreAddr) + "=" + store_address);
    spec.env.push_back(std::string(bootstrap::kEnvJobSecret) + "=" + secret);
    if (lifeline_fd >= 0) spec.env.push_back(std::string(bootstrap::kEnvLauncherFd) + "=" + std::to_string(lifeline_fd));
    spec.lifeline_fd = lifeline_fd;
    spec.capture_output = options.prefix;
    spec.cpu = cpus[r];
    // A rank is in its own process group, so reading a terminal would stop it (SIGTTIN).
    spec.inherit_stdin = r == 0 && !stdin_is_terminal;
  }
  return specs;
}

int run(const Options& options) {
  const char* given = std::getenv(bootstrap::kEnvJobSecret);
  std::string secret = given != nullptr && *given != '\0' ? given : bootstrap::generateSecret();
  std::unique_ptr<bootstrap::StoreServer> store;
  Status st = bootstrap::StoreServer::start(kStoreHost, 0, secret, &store);
  if (!st) {
    writeAll(STDERR_FILENO, "collrun: cannot start the rendezvous store: " + st.message() + "\n");
    return 1;
  }
  std::string address = std::string(kStoreHost) + ":" + std::to_string(store->port());
  // Two pipes per rank, and the store's connections: up to four per rank (the communicator's,
  // the ledger responder's, the presence one and the fault-tolerance calls'), and some slack.
  raiseFdLimit(6 * options.np + 64);
  // The ranks' lifeline: they inherit the read end; the write end stays here alone and closes
  // when collrun ends, however it ends (comm/launcher_lifeline.h). Without it the ranks still
  // die with collrun through PR_SET_PDEATHSIG, but not a rank started through a wrapper.
  int lifeline[2] = {-1, -1};
  if (::pipe2(lifeline, O_CLOEXEC) != 0)
    writeAll(STDERR_FILENO, std::string("collrun: no lifeline pipe (") + std::strerror(errno) +
                                "): ranks started through a wrapper may outlive a killed collrun\n");
  return runJob(makeSpecs(options, address, secret, lifeline[0]), options.job);
}

}  // namespace
}  // namespace coll::collrun

int main(int argc, char** argv) {
  using namespace coll::collrun;
  ensureStandardFdsOpen();
  recordInheritedFds();
  Options options;
  coll::Status st = parseArgs(argc, argv, &options);
  if (options.help) {
    writeAll(STDOUT_FILENO, kUsage);
    return 0;
  }
  if (!st) {
    writeAll(STDERR_FILENO, "collrun: " + st.message() + "\n");
    return kUsageExitCode;
  }
  return run(options);
}
