#include "coll_train_common.h"

#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>

#include "trainer/comm_hook.h"
#include "tasks/device_timed_dense.h"
#include "tasks/digits.h"
#include "trainer/mlp.h"
#include "trainer/relu.h"
#include "trainer/replicated_update.h"
#include "trainer/sharded_update.h"
#include "tasks/teacher_task.h"

namespace coll::trainer {
namespace {

std::string digitsPath(const TrainOptions& o) {
  if (!o.data.empty()) return o.data;
  if (const char* env = std::getenv("COLL_DIGITS_CSV"); env && *env) return env;
  struct stat st {};
  if (::stat(COLL_DIGITS_CSV_DEFAULT, &st) == 0) return COLL_DIGITS_CSV_DEFAULT;
  throw std::runtime_error(std::string("no digits CSV at ") + COLL_DIGITS_CSV_DEFAULT +
                           ": the build writes it when scikit-learn is installed (apt-get install python3-sklearn, then "
                           "rebuild), or pass --data");
}

TeacherSpec teacherSpec(const TrainOptions& o) {
  TeacherSpec s;
  s.inputs = o.width;
  s.train_examples = o.examples;
  s.test_examples = std::max<size_t>(o.examples / 4, 1);
  return s;
}

}  // namespace

Task loadTask(const TrainOptions& o, int shard, int shards) {
  Task t;
  if (o.task == "digits") {
    const std::string path = digitsPath(o);
    t.train = loadDigitsShard(path, Split::train, shard, shards);
    t.test = loadDigitsShard(path, Split::test, shard, shards);
    t.train_total = kDigitsTrain;
  } else {
    const TeacherSpec spec = teacherSpec(o);
    t.train = makeTeacherShard(spec, Split::train, shard, shards);
    t.test = makeTeacherShard(spec, Split::test, shard, shards);
    t.train_total = spec.train_examples;
  }
  return t;
}

std::vector<std::unique_ptr<Layer>> modelLayers(const TrainOptions& o, Communicator* comm) {
  if (o.task == "digits") return mlpLayers({64, o.hidden, 10, o.batch_norm}, comm);
  const size_t classes = TeacherSpec{}.classes;
  if (o.device_gflops <= 0) {
    std::vector<size_t> hidden(o.layers - 1, o.width);
    return mlpLayers({o.width, hidden, classes, o.batch_norm}, comm);
  }
  std::vector<std::unique_ptr<Layer>> layers;
  for (size_t l = 0; l < o.layers; ++l) {
    layers.push_back(std::make_unique<DeviceTimedDense>(o.width, l + 1 < o.layers ? o.width : classes, o.device_gflops));
    if (l + 1 < o.layers) layers.push_back(std::make_unique<Relu>());
  }
  return layers;
}

std::unique_ptr<UpdateStrategy> makeUpdate(const TrainOptions& o) {
  if (o.zero) return std::make_unique<ShardedUpdate>(makeOptimizer(o.optimizer, o.lr));
  return std::make_unique<ReplicatedUpdate>(makeOptimizer(o.optimizer, o.lr), makeCommHook(o.compress, Reduction::average));
}

// Every rank's string, on every rank (two all-gathers: lengths, then the padded bytes).
std::vector<std::string> allgatherStrings(Communicator& comm, const std::string& mine) {
  const size_t n = static_cast<size_t>(comm.size());
  std::vector<uint64_t> lengths(n);
  uint64_t length = mine.size();
  comm.allgather(&length, lengths.data(), 1, DataType::u64).wait();
  size_t longest = 0;
  for (uint64_t l : lengths) longest = std::max<size_t>(longest, l);
  std::string padded = mine;
  padded.resize(longest);
  std::string all(longest * n, '\0');
  if (longest > 0) comm.allgather(padded.data(), all.data(), longest, DataType::u8).wait();
  std::vector<std::string> out(n);
  for (size_t r = 0; r < n; ++r) out[r] = all.substr(r * longest, lengths[r]);
  return out;
}

PipelineOptions pipelineOptionsFrom(const TrainOptions& o) {
  PipelineOptions p;
  p.stages = o.stages;
  p.micro_batches = o.micro_batches;
  p.schedule = parsePipelineSchedule(o.schedule);
  p.input_width = o.task == "digits" ? 64 : o.width;
  p.seed = o.seed;
  if (o.bucket_mb > 0) p.buckets.bucket_bytes = static_cast<size_t>(o.bucket_mb * (1 << 20));
  return p;
}

}  // namespace coll::trainer
