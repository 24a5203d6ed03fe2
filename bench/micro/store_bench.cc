// The rendezvous store's costs, for coll-sim's start-up model (tools/sim/startup_model.h):
// one client's round trip per request on loopback, and the server's time per request when
// many clients ask at once (its one thread is then the limit), and per connection.
//
//   store_bench [clients (64)] [requests per client (2000)]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"

using namespace coll::bootstrap;

namespace {

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool connectAll(const std::string& address, const std::string& secret, int n,
                std::vector<std::unique_ptr<StoreClient>>* out) {
  out->resize(static_cast<size_t>(n));
  for (auto& c : *out)
    if (!StoreClient::connect(address, secret, Clock::now() + std::chrono::seconds(30), &c)) return false;
  return true;
}

// Each client sets and reads back its own keys, `per_client` requests in all.
double requestsAtOnce(std::vector<std::unique_ptr<StoreClient>>& clients, int per_client) {
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < clients.size(); ++i)
    threads.emplace_back([&, i] {
      std::string value;
      for (int k = 0; k < per_client / 2; ++k) {
        const std::string key = "bench/" + std::to_string(i) + "/" + std::to_string(k);
        (void)clients[i]->set(key, "0123456789abcdef", Clock::now() + std::chrono::seconds(30));
        (void)clients[i]->get(key, &value, Clock::now() + std::chrono::seconds(30));
      }
    });
  for (std::thread& t : threads) t.join();
  return secondsSince(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const int clients = argc > 1 ? std::atoi(argv[1]) : 64;
  const int per_client = argc > 2 ? std::atoi(argv[2]) : 2000;
  const std::string secret = generateSecret();
  std::unique_ptr<StoreServer> server;
  if (!StoreServer::start("127.0.0.1", 0, secret, &server)) return std::fprintf(stderr, "no store\n"), 1;
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  std::vector<std::unique_ptr<StoreClient>> one, many;
  if (!connectAll(address, secret, 1, &one)) return std::fprintf(stderr, "cannot connect\n"), 1;
  const double alone = requestsAtOnce(one, per_client) / per_client;
  const auto t0 = Clock::now();
  if (!connectAll(address, secret, clients, &many)) return std::fprintf(stderr, "cannot connect\n"), 1;
  const double per_connection = secondsSince(t0) / clients;
  const double together = requestsAtOnce(many, per_client) / (static_cast<double>(per_client) * clients);
  std::printf("# store on loopback, %u CPUs\n", std::thread::hardware_concurrency());
  std::printf("one client: %.1f us a request (round trip)\n", alone * 1e6);
  std::printf("%d clients at once: %.1f us of the store a request (throughput's inverse)\n", clients, together * 1e6);
  std::printf("%d connections one after another: %.1f us each (connect, challenge, MAC)\n", clients, per_connection * 1e6);
  return 0;
}
