// coll-doctor's parts without a cluster: the verdict on made-up reports (each fault named with
// its fix, warnings that do not fail, one finding per cause), the reports' JSON round trip,
// and the connection probe on loopback (a good peer, a closed port, a listener that never
// answers). tests/launcher/doctor_faults.sh injects the same faults on simulated hosts.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/fd_io.h"
#include "host_report.h"
#include "pair_probe.h"
#include "verdict.h"

namespace coll::doctor {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// `hosts` hosts of `per_host` ranks, everything healthy; every rank probed every rank on
// another host successfully.
Inputs healthy(int hosts, int per_host) {
  Inputs in;
  in.size = hosts * per_host;
  in.store = "10.0.0.1:29500";
  in.reports.resize(in.size);
  in.probes.resize(in.size);
  for (int r = 0; r < in.size; ++r) {
    HostReport h;
    h.rank = r;
    h.hostname = "h" + std::to_string(r / per_host);
    h.host_id = h.hostname + "/boot";
    h.chosen = InterfaceInfo{"eth0", "10.0.0." + std::to_string(r / per_host + 1), 1500, true, true};
    h.interfaces = {h.chosen};
    h.shm_free = 1024 * kMiB;
    h.shm_per_peer = 1280 << 10;
    h.rmem_max = h.wmem_max = h.socket_buffer = 4 * kMiB;
    h.gpu = "no GPU";
    h.probe_address = h.chosen.address + ":4000" + std::to_string(r);
    in.reports[r] = h;
  }
  for (int a = 0; a < in.size; ++a)
    for (int b = 0; b < in.size; ++b)
      if (a / per_host != b / per_host) in.probes[a].push_back(ProbeResult{b, true, "transfer", "", 1.0});
  return in;
}

void failProbe(Inputs* in, int from, int to, const char* stage, const char* why) {
  for (ProbeResult& p : in->probes[from])
    if (p.peer == to) p = ProbeResult{to, false, stage, why, 2000};
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DoctorVerdict, AHealthyJobIsOk) {
  Verdict v = judge(healthy(2, 2));
  EXPECT_FALSE(v.failed) << v.text;
  EXPECT_NE(v.text.find("connection probes between hosts: 8 of 8 succeeded"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("verdict: OK\n"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, ARankThatNeverReportedIsNamed) {
  Inputs in = healthy(3, 1);
  in.reports[2].reset();
  in.probes[2].clear();
  for (auto& list : in.probes) std::erase_if(list, [](const ProbeResult& p) { return p.peer == 2; });
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("rank(s) 2 never reported to the store at 10.0.0.1:29500"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, AnInterfaceThatIsDownFails) {
  Inputs in = healthy(2, 1);
  in.reports[1]->chosen.up = false;
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("h1: interface eth0 is down. Fix: bring it up (ip link set eth0 up)"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, NoInterfaceAtAllFails) {
  Inputs in = healthy(2, 1);
  in.reports[0]->choose_error = "no route to rendezvous host '10.0.0.9': Network is unreachable";
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("no interface for coll's sockets: no route"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, DevShmTooSmallForTheHostsRanks) {
  Inputs in = healthy(2, 2);
  in.reports[2]->shm_free = in.reports[3]->shm_free = kMiB;  // host h1: needs 2 x 1 x 1.25 MiB
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("h1: /dev/shm has 1.0 MiB free, and coll's shared memory needs 2.5 MiB for its 2 ranks"),
            std::string::npos) << v.text;
  EXPECT_EQ(v.text.find("h0: /dev/shm"), std::string::npos) << "h0 has room";
}

TEST(DoctorVerdict, OneRankPerHostNeedsNoSharedMemory) {
  Inputs in = healthy(2, 1);
  in.reports[1]->shm_free = 0;
  EXPECT_FALSE(judge(in).failed);
}

TEST(DoctorVerdict, TimedOutConnectionsIntoOneHostBlameItsFirewallOnce) {
  Inputs in = healthy(4, 1);
  for (int a : {0, 2, 3}) failProbe(&in, a, 1, "connect", "timed out (a firewall drops the packets, or the host is gone)");
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("9 of 12 succeeded"), std::string::npos) << v.text;
  EXPECT_EQ(count(v.text, "connect: timed out"), 3) << v.text;
  EXPECT_NE(v.text.find("FAIL: 3 pair(s) failed. Fix: a firewall on h1"), std::string::npos) << v.text;
  EXPECT_EQ(count(v.text, "FAIL:"), 1) << v.text;
}

TEST(DoctorVerdict, RefusedAndUnreachableHaveTheirOwnFixes) {
  Inputs in = healthy(3, 1);
  failProbe(&in, 0, 1, "connect", "refused (nothing listens on that port there, or a firewall rejects it)");
  failProbe(&in, 0, 2, "connect", "unreachable (No route to host: no route, or the interface is down)");
  Verdict v = judge(in);
  EXPECT_NE(v.text.find("a firewall on h1 rejects TCP from h0"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("check the route from h0 to h2 (ip route get 10.0.0.3)"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, AStalledTransferBothWaysIsOneMtuFinding) {
  Inputs in = healthy(3, 1);
  in.reports[1]->chosen.mtu = in.reports[2]->chosen.mtu = 9000;
  failProbe(&in, 1, 2, "transfer", "connected, but the transfer timed out");
  failProbe(&in, 2, 1, "transfer", "connected, but the transfer timed out");
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("FAIL: 2 pair(s) failed. Fix: full-size packets are lost between h1 (MTU 9000) and h2 (MTU 9000)"),
            std::string::npos) << v.text;
  EXPECT_NE(v.text.find("WARN: the MTU differs between hosts: 1500 on h0 eth0; 9000 on h1 eth0, h2 eth0"),
            std::string::npos) << v.text;
}

TEST(DoctorVerdict, DifferentMtusAloneAreAWarning) {
  Inputs in = healthy(3, 1);
  in.reports[1]->chosen.mtu = 9000;
  Verdict v = judge(in);
  EXPECT_FALSE(v.failed) << v.text;
  EXPECT_EQ(v.warnings, 1);
  EXPECT_NE(v.text.find("verdict: OK (1 warning(s))"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, CappedSocketBuffersWarnWithTheSysctl) {
  Inputs in = healthy(2, 1);
  in.reports[0]->rmem_max = 212992;
  Verdict v = judge(in);
  EXPECT_FALSE(v.failed);
  EXPECT_NE(v.text.find("sysctl -w net.core.rmem_max=4194304"), std::string::npos) << v.text;
}

TEST(DoctorVerdict, SettingsInitWouldRefuseFail) {
  Inputs in = healthy(2, 1);
  in.reports[1]->config_problems = {"COLL_SHM_NSLOTS=many: expected an integer in [2, 4096]"};
  Verdict v = judge(in);
  EXPECT_TRUE(v.failed);
  EXPECT_NE(v.text.find("rank 1: coll's init would refuse its settings: COLL_SHM_NSLOTS=many"), std::string::npos) << v.text;
}

TEST(DoctorReport, SurvivesItsJsonRoundTrip) {
  HostReport h = *healthy(1, 1).reports[0];
  h.rdma_devices = {"mlx5_0"};
  h.config_problems = {"COLL_X=1: expected y"};
  HostReport back;
  ASSERT_TRUE(fromJson(toJson(h), &back));
  EXPECT_EQ(toJson(back).dump(), toJson(h).dump());
  EXPECT_FALSE(fromJson(Json(3), &back));
}

TEST(DoctorReport, OfThisHostNamesAnInterfaceAndTheShmNeed) {
  Config config;
  HostReport h = collectHostReport(config, 0, "127.0.0.1");
  EXPECT_EQ(h.choose_error, "");
  EXPECT_EQ(h.chosen.name, "lo");
  EXPECT_GT(h.chosen.mtu, 0);
  EXPECT_EQ(h.shm_per_peer, shmBytesPerPeer(config));
  EXPECT_GT(h.shm_per_peer, config.shm_slot_bytes * static_cast<size_t>(config.shm_nslots));
}

TEST(DoctorProbe, AGoodPeerConfirmsEveryByte) {
  std::unique_ptr<ProbeListener> l;
  ASSERT_TRUE(ProbeListener::open("127.0.0.1", &l));
  ProbeResult r = probe(1, l->address(), ProbeLimits{});
  EXPECT_TRUE(r.ok) << r.why;
}

TEST(DoctorProbe, AClosedPortIsRefused) {
  std::string address;
  {
    std::unique_ptr<ProbeListener> l;
    ASSERT_TRUE(ProbeListener::open("127.0.0.1", &l));
    address = l->address();
  }
  ProbeResult r = probe(1, address, ProbeLimits{});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "connect");
  EXPECT_EQ(r.why.rfind("refused", 0), 0u) << r.why;
}

TEST(DoctorProbe, AListenerThatNeverAnswersStallsTheTransfer) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd.get(), 4), 0);  // never accepted: the kernel completes the handshake alone
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  ProbeLimits limits;
  limits.transfer = std::chrono::milliseconds(300);
  ProbeResult r = probe(1, "127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), limits);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "transfer");
  EXPECT_NE(r.why.find("the peer confirmed none of 4194304 bytes within 0.3 s"), std::string::npos) << r.why;
}

}  // namespace
}  // namespace coll::doctor
