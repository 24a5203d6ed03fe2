// Data-parallel training of a digits classifier (scikit-learn's 8x8 digits) on coll.
//
//   build/bin/collrun -n 4 build/bin/digits_mlp --epochs 30 --batch 64
//
// Each rank reads only its shard of the training set; the global batch (--batch) is split
// evenly over the ranks, so 1 and 4 ranks take the same number of steps of the same size.
// Options: --epochs N  --batch GLOBAL  --hidden 64,64  --optimizer sgd|adam  --lr X
//          --zero (ZeRO-1 sharded optimizer)  --compress none|fp16|bf16  --batchnorm
//          --seed N  --data PATH  --trace FILE (Chrome trace of rank 0)  --check-hash
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "trainer/comm_hook.h"
#include "trainer/digits.h"
#include "trainer/mlp.h"
#include "trainer/replicated_update.h"
#include "trainer/sharded_update.h"
#include "trainer/trainer.h"

using namespace coll::trainer;

namespace {

struct Options {
  int epochs = 30;
  size_t batch = 64;
  std::vector<size_t> hidden = {64};
  std::string optimizer = "adam", compress = "none", data = kDefaultDigitsPath, trace;
  float lr = 0;  // 0: 3e-3 for adam, 0.05 for sgd
  bool zero = false, batch_norm = false, check_hash = false;
  unsigned seed = 1;
};

std::vector<size_t> parseList(const char* s) {
  std::vector<size_t> out;
  for (char* p = const_cast<char*>(s); *p;) {
    out.push_back(std::strtoul(p, &p, 10));
    if (*p == ',') ++p;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) { std::fprintf(stderr, "digits_mlp: %s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--epochs") o.epochs = std::atoi(value());
    else if (a == "--batch") o.batch = std::strtoul(value(), nullptr, 10);
    else if (a == "--hidden") o.hidden = parseList(value());
    else if (a == "--optimizer") o.optimizer = value();
    else if (a == "--lr") o.lr = std::strtof(value(), nullptr);
    else if (a == "--compress") o.compress = value();
    else if (a == "--data") o.data = value();
    else if (a == "--trace") o.trace = value();
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::atoi(value()));
    else if (a == "--zero") o.zero = true;
    else if (a == "--batchnorm") o.batch_norm = true;
    else if (a == "--check-hash") o.check_hash = true;
    else { std::fprintf(stderr, "digits_mlp: unknown option %s (see the file's header)\n", a.c_str()); std::exit(2); }
  }
  if (o.lr == 0) o.lr = o.optimizer == "sgd" ? 0.05f : 3e-3f;
  return o;
}

// Every rank's parameter hash must equal rank 0's (an all-gather of the hashes).
void checkIdentical(coll::Communicator& comm, Model& model, int64_t step) {
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  uint64_t mine = hashParameters(model.values());
  comm.allgather(&mine, all.data(), 1, coll::DataType::u64).wait();
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      std::fprintf(stderr, "digits_mlp: step %lld: rank %zu's parameters differ from rank 0's\n",
                   static_cast<long long>(step), r);
      std::exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  auto comm = coll::Communicator::fromEnvironment();
  const int rank = comm->rank(), world = comm->size();
  if (o.batch % static_cast<size_t>(world) != 0) {
    std::fprintf(stderr, "digits_mlp: --batch %zu is not a multiple of %d ranks\n", o.batch, world);
    return 2;
  }
  Dataset train = loadDigitsShard(o.data, Split::train, rank, world);
  Dataset test = loadDigitsShard(o.data, Split::test, rank, world);
  Model model;
  buildMlp(model, {64, o.hidden, 10, o.batch_norm}, comm.get(), o.seed);
  std::unique_ptr<UpdateStrategy> update;
  if (o.zero) update = std::make_unique<ShardedUpdate>(makeOptimizer(o.optimizer, o.lr));
  else update = std::make_unique<ReplicatedUpdate>(makeOptimizer(o.optimizer, o.lr), makeCommHook(o.compress, Reduction::average));
  Trainer trainer(*comm, model, std::move(update));

  const size_t steps_per_epoch = kDigitsTrain / o.batch;
  ShardSampler sampler(train, o.batch / static_cast<size_t>(world), steps_per_epoch, o.seed, rank);
  double epoch_loss = 0;
  auto step = [&](Trainer& t, const Batch& batch, int64_t s) {
    epoch_loss += t.trainStep(batch).loss;
    if (o.check_hash) checkIdentical(*comm, model, s);
  };
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    epoch_loss = 0;
    trainer.run(static_cast<int64_t>(steps_per_epoch), [&](int64_t s) { return sampler.batch(s); }, step);
    double loss = trainer.globalMean(epoch_loss / static_cast<double>(steps_per_epoch));
    double acc = evaluateAccuracy(model, test, *comm);
    if (rank == 0) std::printf("epoch %3d  loss %.4f  test accuracy %.2f%%\n", epoch + 1, loss, 100 * acc);
  }
  double acc = evaluateAccuracy(model, test, *comm);
  if (rank == 0) {
    std::printf("ranks %d  global batch %zu  optimizer %s%s  state %zu bytes/rank  test accuracy %.2f%%\n", world,
                o.batch, o.optimizer.c_str(), o.zero ? " (ZeRO-1)" : "", trainer.update().optimizerStateBytes(),
                100 * acc);
    if (!o.trace.empty()) trainer.flushedTimeline().writeChromeTrace(o.trace, rank);
  }
  return 0;
}
