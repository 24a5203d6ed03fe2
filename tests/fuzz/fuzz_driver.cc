// main() for a fuzz target built without libFuzzer (g++, or a CI without clang): replays every
// file of the given corpus directories, then runs a bounded number of mutated inputs drawn
// from that corpus, and reports how many executions ran. A crash (a signal, an abort from a
// failed check or a sanitizer) writes the input that caused it to ./crash-<pid> first, so it
// can be replayed:   fuzz_X crash-1234
//
//   fuzz_X [--runs N] [--seed S] [--max-len L] [corpus dir or file]...
//
// The same targets link against libFuzzer instead (COLL_FUZZ_ENGINE=libfuzzer, clang), which
// explores with coverage feedback; this driver only mutates blindly, a bounded smoke test.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::vector<uint8_t>;

// The input being run, for the crash handler (async-signal-safe writes only there).
const Input* g_current = nullptr;

void onCrash(int sig) {
  char name[64];
  std::snprintf(name, sizeof name, "crash-%d", static_cast<int>(::getpid()));
  int fd = ::open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0 && g_current) {
    ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
    (void)ignored;
    ::close(fd);
  }
  const char msg[] = "fuzz: crashed; the input is in ./crash-<pid>\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void loadInputs(const std::string& path, std::vector<Input>* corpus) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file()) files.push_back(e.path());
  } else {
    files.push_back(path);
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    corpus->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
}

// One to four random edits: flip a bit, overwrite a byte with a random or boundary value,
// insert or erase a run, copy a run elsewhere, or splice in part of another input.
Input mutate(const std::vector<Input>& corpus, std::mt19937_64& rng, size_t max_len) {
  Input in = corpus.empty() ? Input{} : corpus[rng() % corpus.size()];
  static const uint8_t kBoundary[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x10, 0x40};
  int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t pos = in.empty() ? 0 : rng() % in.size();
    switch (rng() % 6) {
      case 0: if (!in.empty()) in[pos] ^= uint8_t(1u << (rng() % 8)); break;
      case 1: if (!in.empty()) in[pos] = kBoundary[rng() % sizeof kBoundary]; break;
      case 2: in.insert(in.begin() + pos, 1 + rng() % 8, uint8_t(rng())); break;
      case 3: if (!in.empty()) in.erase(in.begin() + pos, in.begin() + std::min(in.size(), pos + 1 + rng() % 8)); break;
      case 4: if (!in.empty()) { size_t n = std::min<size_t>(in.size() - pos, 1 + rng() % 16);
                                 Input run(in.begin() + pos, in.begin() + pos + n);
                                 size_t at = rng() % (in.size() + 1);
                                 in.insert(in.begin() + at, run.begin(), run.end()); } break;
      default: if (!corpus.empty()) { const Input& other = corpus[rng() % corpus.size()];
                                      size_t from = other.empty() ? 0 : rng() % other.size();
                                      in.resize(pos);
                                      in.insert(in.end(), other.begin() + from, other.end()); } break;
    }
  }
  if (in.size() > max_len) in.resize(max_len);
  return in;
}

void runOne(const Input& in) {
  g_current = &in;
  LLVMFuzzerTestOneInput(in.data(), in.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 10000, seed = 1;
  size_t max_len = 4096;
  std::vector<Input> corpus;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-len") && i + 1 < argc) max_len = std::strtoull(argv[++i], nullptr, 10);
    else loadInputs(argv[i], &corpus);
  }
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, onCrash);
  auto start = std::chrono::steady_clock::now();
  for (const Input& in : corpus) runOne(in);
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < runs; ++i) runOne(mutate(corpus, rng, max_len));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz: %llu executions (%zu corpus inputs + %llu mutated, seed %llu) in %.1f s, no crash\n",
              (unsigned long long)(corpus.size() + runs), corpus.size(), (unsigned long long)runs,
              (unsigned long long)seed, seconds);
  return 0;
}
