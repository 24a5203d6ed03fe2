// Bootstrap pieces that need no peers: Slurm host lists, PMI-1 reply parsing (and a PMI-1
// conversation with a fake Hydra over a socketpair), host:port splitting, the MAC and secret,
// and detectLaunch against each launcher's environment (set with setenv, restored after).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/pmi1.h"
#include "bootstrap/pmix_exchange.h"
#include "bootstrap/slurm_hostlist.h"
#include "bootstrap/store.h"
#include "bootstrap/store_port_range.h"

namespace coll::bootstrap {
namespace {

using Hosts = std::vector<std::string>;

Hosts expand(const std::string& list) {
  Hosts hosts;
  Status st = expandHostList(list, &hosts);
  EXPECT_TRUE(st) << list << ": " << st.message();
  return hosts;
}

TEST(HostList, Expands) {
  EXPECT_EQ(expand("n[01-03,7],gpu5"), (Hosts{"n01", "n02", "n03", "n7", "gpu5"}));
  EXPECT_EQ(expand("node1"), (Hosts{"node1"}));
  EXPECT_EQ(expand("a,b,c"), (Hosts{"a", "b", "c"}));
  EXPECT_EQ(expand("n[08-10]"), (Hosts{"n08", "n09", "n10"}));  // padding kept across a digit change
  EXPECT_EQ(expand("n[9-11]"), (Hosts{"n9", "n10", "n11"}));
  EXPECT_EQ(expand("rack[1-2]-node"), (Hosts{"rack1-node", "rack2-node"}));
  EXPECT_EQ(expand("x[3]"), (Hosts{"x3"}));
  EXPECT_EQ(expand("a[1-2],b[001-002]"), (Hosts{"a1", "a2", "b001", "b002"}));
  std::string first;
  ASSERT_TRUE(firstHostOfList("gpu[12-15],cpu1", &first));
  EXPECT_EQ(first, "gpu12");
}

TEST(HostList, Errors) {
  for (const char* bad : {"", "n[01-03", "n[3-1]", "n[a-b]", "n[]", "n[1-]", "n[0-200000]"}) {
    Hosts hosts;
    Status st = expandHostList(bad, &hosts);
    EXPECT_FALSE(st) << "'" << bad << "' was accepted";
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << bad;
  }
  std::string first;
  EXPECT_FALSE(firstHostOfList("", &first));
  // Each range is short enough, the whole list is not (kMaxHostListHosts).
  Hosts hosts;
  EXPECT_EQ(expandHostList("a[0-99999],b[0-99999]", &hosts).code(), ErrorCode::InvalidArgument);
  // The largest long as a range end: counted, not incremented past it.
  hosts.clear();
  ASSERT_TRUE(expandHostList("n[9223372036854775807]", &hosts));
  EXPECT_EQ(hosts, (Hosts{"n9223372036854775807"}));
}

TEST(Pmi, Field) {
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=abc", "value"), "abc");
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=abc", "rc"), "0");
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=abc", "cmd"), "get_result");
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=abc\n", "value"), "abc");
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=", "value"), "");
  EXPECT_EQ(pmiField("cmd=get_result rc=0", "value"), "");
  // A field name that is the tail of another is not matched ("myrc=" is not "rc=").
  EXPECT_EQ(pmiField("cmd=x myrc=5 rc=1", "rc"), "1");
  EXPECT_EQ(pmiField("cmd=x myrc=5", "rc"), "");
  // Values may hold '=' and ',' (the store entry is "host:port,secret").
  EXPECT_EQ(pmiField("cmd=get_result rc=0 value=10.0.0.1:5000,abc=", "value"), "10.0.0.1:5000,abc=");
}

// A minimal Hydra: answers init, kvsname, put, barrier and get over one socket.
class FakeHydra {
 public:
  FakeHydra() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    client_fd_ = sv[0];
    server_fd_ = sv[1];
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHydra() {
    ::shutdown(client_fd_, SHUT_RDWR);
    thread_.join();
    ::close(client_fd_);
    ::close(server_fd_);
  }
  int clientFd() const { return client_fd_; }
  std::map<std::string, std::string> kvs;  // preset before the client talks; put by it
  std::vector<std::string> commands() {
    std::lock_guard<std::mutex> lock(mu_);
    return commands_;
  }

 private:
  void reply(const std::string& line) { (void)!::write(server_fd_, line.data(), line.size()); }
  void serve() {
    std::string buf;
    char c;
    while (::read(server_fd_, &c, 1) == 1) {
      if (c != '\n') {
        buf += c;
        continue;
      }
      std::string cmd = pmiField(buf, "cmd");
      {
        std::lock_guard<std::mutex> lock(mu_);
        commands_.push_back(cmd);
      }
      if (cmd == "init") reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
      else if (cmd == "get_my_kvsname") reply("cmd=my_kvsname kvsname=kvs_42_0\n");
      else if (cmd == "put") {
        kvs[pmiField(buf, "key")] = pmiField(buf, "value");
        reply("cmd=put_result rc=0\n");
      } else if (cmd == "barrier_in") {
        reply("cmd=noise from=hydra\n");  // an unexpected line the client must skip
        reply("cmd=barrier_out\n");
      } else if (cmd == "get") {
        auto it = kvs.find(pmiField(buf, "key"));
        if (it == kvs.end()) reply("cmd=get_result rc=-1 msg=key_not_found\n");
        else reply("cmd=get_result rc=0 value=" + it->second + "\n");
      } else if (cmd == "finalize") {
        reply("cmd=finalize_ack\n");
      }
      buf.clear();
    }
  }
  int client_fd_ = -1, server_fd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> commands_;
};

TEST(Pmi, ConversationWithAFakeHydra) {
  FakeHydra hydra;
  hydra.kvs["preset"] = "value1";
  Deadline deadline = Clock::now() + std::chrono::seconds(5);
  Pmi1Client pmi;
  ASSERT_TRUE(Pmi1Client::connect(hydra.clientFd(), deadline, &pmi));
  ASSERT_TRUE(pmi.put("k", "v", deadline));
  ASSERT_TRUE(pmi.barrier(deadline));
  std::string value;
  ASSERT_TRUE(pmi.get("preset", &value, deadline));
  EXPECT_EQ(value, "value1");
  ASSERT_TRUE(pmi.get("k", &value, deadline));
  EXPECT_EQ(value, "v");
  Status st = pmi.get("missing", &value, deadline);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("missing"), std::string::npos) << st.message();
}

TEST(SplitHostPort, Forms) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(splitHostPort("127.0.0.1:29500", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 29500);
  ASSERT_TRUE(splitHostPort("node-7.cluster:1", &host, &port));
  EXPECT_EQ(host, "node-7.cluster");
  EXPECT_EQ(port, 1);
  ASSERT_TRUE(splitHostPort("[::1]:5", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 5);
  ASSERT_TRUE(splitHostPort("[fe80::1%eth0]:65535", &host, &port));
  EXPECT_EQ(host, "fe80::1%eth0");
  EXPECT_EQ(port, 65535);
  for (const char* bad : {"", "host", "host:", ":", "host:0", "host:65536", "host:12x", "host:-1", "[::1]"}) {
    Status st = splitHostPort(bad, &host, &port);
    EXPECT_FALSE(st) << "'" << bad << "' was accepted";
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << bad;
  }
}

TEST(Auth, MacDependsOnSecretAndMessage) {
  uint64_t base = computeMac("secret", "message");
  EXPECT_EQ(computeMac("secret", "message"), base) << "deterministic";
  EXPECT_NE(computeMac("secret2", "message"), base);
  EXPECT_NE(computeMac("secret", "messagf"), base);
  EXPECT_NE(computeMac("", "message"), base);
  EXPECT_NE(computeMac("secret", ""), base);
  // Boundary lengths of the 8-byte blocks, and a secret longer than the key.
  std::set<uint64_t> macs;
  for (size_t len = 0; len <= 17; ++len) macs.insert(computeMac(std::string(200, 's'), std::string(len, 'm')));
  EXPECT_EQ(macs.size(), 18u);
}

TEST(Auth, SecretsAreFreshHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    std::string s = generateSecret();
    EXPECT_EQ(s.size(), 32u) << s;  // 128 random bits
    EXPECT_EQ(s.find_first_not_of("0123456789abcdef"), std::string::npos) << s;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_NE(randomNonce(), randomNonce());
}

// ---------------------------------------------------------------------------------------
// detectLaunch: every variable any launcher path reads is saved, cleared for the test, and
// restored afterwards.

constexpr const char* kLaunchVars[] = {
    "COLL_STORE_ADDR", "COLL_RANK", "COLL_WORLD_SIZE", "COLL_LOCAL_RANK", "COLL_LOCAL_SIZE", "COLL_JOB_SECRET",
    "COLL_STORE_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RUN_ID", "PMI_RANK", "PMI_SIZE", "PMI_FD", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_STEP_NUM_NODES", "SLURM_STEP_RESV_PORTS"};

class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kLaunchVars) {
      const char* value = std::getenv(v);
      if (value) saved_[v] = value;
      ::unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : kLaunchVars) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  static void set(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [k, v] : vars) ::setenv(k, v, 1);
  }
  static LaunchInfo detectOk() {
    LaunchInfo info;
    Status st = detectLaunch(&info);
    EXPECT_TRUE(st) << st.message();
    return info;
  }
  static Status detectFails() {
    LaunchInfo info;
    Status st = detectLaunch(&info);
    EXPECT_FALSE(st) << "accepted: launcher " << info.launcher << " rank " << info.rank;
    return st;
  }

  std::map<std::string, std::string> saved_;
};

TEST_F(LaunchEnv, NothingSetNamesTheWaysToStart) {
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  for (const char* word : {"collrun", "torchrun", "mpirun", "srun", "MASTER_ADDR"})
    EXPECT_NE(st.message().find(word), std::string::npos) << "should mention " << word << ": " << st.message();
}

TEST_F(LaunchEnv, Collrun) {
  set({{"COLL_STORE_ADDR", "127.0.0.1:4000"}, {"COLL_RANK", "2"}, {"COLL_WORLD_SIZE", "4"},
       {"COLL_LOCAL_RANK", "2"}, {"COLL_JOB_SECRET", "s3cret"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "collrun");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.store_address, "127.0.0.1:4000");
  EXPECT_FALSE(info.host_store);
  EXPECT_EQ(info.secret, "s3cret");
}

TEST_F(LaunchEnv, CollrunWithoutSecretIsRefused) {
  set({{"COLL_STORE_ADDR", "127.0.0.1:4000"}, {"COLL_RANK", "0"}, {"COLL_WORLD_SIZE", "2"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("COLL_JOB_SECRET"), std::string::npos) << st.message();
}

TEST_F(LaunchEnv, CollrunRankOutOfRange) {
  set({{"COLL_STORE_ADDR", "127.0.0.1:4000"}, {"COLL_RANK", "4"}, {"COLL_WORLD_SIZE", "4"}, {"COLL_JOB_SECRET", "s"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("rank 4 of 4"), std::string::npos) << st.message();
}

TEST_F(LaunchEnv, PlainMasterAddr) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "env");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 3);
  EXPECT_EQ(info.store_address, "10.1.2.3:29500");
  EXPECT_EQ(info.store_port_tries, 1) << "a port the user set by hand is that port only";
  EXPECT_TRUE(info.host_store) << "rank 0 serves the store";
  EXPECT_FALSE(info.secret.empty());
  ::setenv("RANK", "1", 1);
  LaunchInfo other = detectOk();
  EXPECT_FALSE(other.host_store);
  EXPECT_EQ(other.secret, info.secret) << "a derived secret must be the same on every rank";
}

TEST_F(LaunchEnv, ExplicitSecretWins) {
  set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}, {"COLL_JOB_SECRET", "mine"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.secret, "mine");
  EXPECT_EQ(info.secret_origin, "COLL_JOB_SECRET");
}

TEST_F(LaunchEnv, TorchrunAgentStoreShiftsThePort) {
  set({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"},
       {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RUN_ID", "job7"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.store_address, "127.0.0.1:29501") << "torchrun's own TCPStore holds MASTER_PORT";
  EXPECT_EQ(info.store_port_tries, kDerivedStorePortTries) << "a derived port may be taken: the next ones are tried";
  ::setenv("COLL_STORE_PORT", "31000", 1);
  EXPECT_EQ(detectOk().store_address, "127.0.0.1:31000") << "COLL_STORE_PORT overrides";
  EXPECT_EQ(detectOk().store_port_tries, 1) << "a port the user chose is that port only";
  ::unsetenv("COLL_STORE_PORT");
  ::setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
  EXPECT_EQ(detectOk().store_address, "127.0.0.1:29500");
  EXPECT_EQ(detectOk().store_port_tries, kDerivedStorePortTries)
      << "c10d's MASTER_PORT is one torchrun found free and let go";
  // Two torchrun jobs on one rendezvous must not share a derived secret.
  ::setenv("TORCHELASTIC_RUN_ID", "job8", 1);
  std::string s8 = detectOk().secret;
  ::setenv("TORCHELASTIC_RUN_ID", "job7", 1);
  EXPECT_NE(detectOk().secret, s8);
}

TEST_F(LaunchEnv, MasterAddrWithoutPortIsRefused) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("MASTER_PORT"), std::string::npos) << st.message();
  ::setenv("MASTER_PORT", "http", 1);
  EXPECT_NE(detectFails().message().find("MASTER_PORT"), std::string::npos);
  ::setenv("MASTER_PORT", "70000", 1);
  EXPECT_NE(detectFails().message().find("MASTER_PORT"), std::string::npos);
}

TEST_F(LaunchEnv, SlurmUsesTheFirstNodeOfTheJob) {
  set({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_JOB_NODELIST", "node[07-09],gpu1"},
       {"SLURM_JOB_ID", "1234"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.store_address, "node07:" + std::to_string(20000 + 1234));
  EXPECT_EQ(info.store_port_tries, kDerivedStorePortTries) << "a port hashed from the job id may be taken";
  EXPECT_FALSE(info.host_store);
  EXPECT_FALSE(info.secret.empty());
  // The step's reserved ports (MpiParams=ports=...) keep concurrent steps of one job apart.
  set({{"SLURM_STEP_RESV_PORTS", "30001-30002"}});
  EXPECT_EQ(detectOk().store_address, "node07:30001");
  EXPECT_EQ(detectOk().store_port_tries, 1) << "a reserved port is the step's own";
  // The step's node list wins over the job's; MASTER_PORT picks the port.
  set({{"SLURM_STEP_NODELIST", "node[08-09]"}, {"MASTER_PORT", "4242"}});
  EXPECT_EQ(detectOk().store_address, "node08:4242");
  ::setenv("SLURM_PROCID", "0", 1);
  EXPECT_TRUE(detectOk().host_store);
}

TEST_F(LaunchEnv, SlurmWithMasterAddrUsesIt) {
  set({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}, {"MASTER_ADDR", "10.9.9.9"},
       {"MASTER_PORT", "5000"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.store_address, "10.9.9.9:5000");
}

TEST_F(LaunchEnv, SlurmWithoutNodeList) {
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("NODELIST"), std::string::npos) << st.message();
}

TEST_F(LaunchEnv, OpenMpiWithMasterAddr) {
  set({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
       {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "6000"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "openmpi");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.store_address, "127.0.0.1:6000");
}

TEST_F(LaunchEnv, OpenMpiAcrossHostsAsksForMasterAddr) {
  set({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
       {"OMPI_MCA_ess_base_jobid", "123"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("MASTER_ADDR"), std::string::npos) << st.message();
}

// Open MPI across hosts with a PMIx server that is gone: PMIx_Init fails at once, naming the
// launcher and the variables that pointed at the server (without PMIx: what to install).
TEST_F(LaunchEnv, OpenMpiWithItsPmixServerGone) {
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);  // a port nothing listens on once closed
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(probe);
  std::string uri = "pmix-server.4242;tcp4://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  set({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
       {"PMIX_NAMESPACE", "job7"}, {"PMIX_RANK", "1"}, {"PMIX_SERVER_URI41", uri.c_str()}});
  Status st = detectFails();
  if (!pmixBuilt()) {
    EXPECT_NE(st.message().find("libpmix-dev"), std::string::npos) << st.message();
    return;
  }
  for (const char* word : {"openmpi", "PMIx_Init", "PMIX_SERVER_URI41"})
    EXPECT_NE(st.message().find(word), std::string::npos) << "should mention " << word << ": " << st.message();
}

TEST_F(LaunchEnv, PmixRankMustBeANumber) {
  set({{"PMIX_NAMESPACE", "job7"}, {"PMIX_RANK", "first"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("pmix: PMIX_RANK=first"), std::string::npos) << st.message();
}

TEST_F(LaunchEnv, MpichNeedsPmiFd) {
  set({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  Status st = detectFails();
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("PMI_FD"), std::string::npos) << st.message();
}

// Rank 1 of an MPICH job: learns the store and secret that rank 0 published in PMI.
TEST_F(LaunchEnv, MpichReadsTheStoreFromPmi) {
  FakeHydra hydra;
  hydra.kvs["coll-store"] = "127.0.0.1:5555,abcdef";
  std::string fd = std::to_string(hydra.clientFd());
  set({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMI_FD", fd.c_str()}, {"MPI_LOCALRANKID", "1"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "mpich");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 2);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.store_address, "127.0.0.1:5555");
  EXPECT_EQ(info.secret, "abcdef");
}

// Hydra's proxy kills every rank of the job when one closes its PMI connection without
// cmd=finalize (it takes it for a crash): after the bootstrap, which is all coll uses PMI for,
// the PMI session must be finalized, or whichever rank exits first takes the others down.
TEST_F(LaunchEnv, MpichFinalizesPmiAfterTheBootstrap) {
  FakeHydra hydra;
  hydra.kvs["coll-store"] = "127.0.0.1:5555,abcdef";
  std::string fd = std::to_string(hydra.clientFd());
  set({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMI_FD", fd.c_str()}});
  detectOk();
  std::vector<std::string> cmds = hydra.commands();
  ASSERT_FALSE(cmds.empty());
  EXPECT_EQ(cmds.front(), "init");
  EXPECT_EQ(cmds.back(), "finalize") << "the PMI session was left open: Hydra kills the job when this rank exits";
}

// Rank 0 of an MPICH job: starts a store and publishes "address,secret" in PMI.
TEST_F(LaunchEnv, MpichRankZeroPublishesTheStore) {
  FakeHydra hydra;
  std::string fd = std::to_string(hydra.clientFd());
  set({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", fd.c_str()}, {"MPI_LOCALNRANKS", "2"}});
  LaunchInfo info = detectOk();
  EXPECT_EQ(info.launcher, "mpich");
  EXPECT_EQ(info.rank, 0);
  EXPECT_FALSE(info.host_store) << "the store already runs; CommOptions must not start another";
  ASSERT_EQ(info.store_address.rfind("127.0.0.1:", 0), 0u) << "single host: loopback: " << info.store_address;
  EXPECT_EQ(info.secret.size(), 32u);
  // The store really serves with that secret.
  std::unique_ptr<StoreClient> c;
  Status st = StoreClient::connect(info.store_address, info.secret, Clock::now() + std::chrono::seconds(5), &c);
  EXPECT_TRUE(st) << st.message();
}

}  // namespace
}  // namespace coll::bootstrap
