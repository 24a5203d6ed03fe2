// coll-train's command line. Run `coll-train --help` for the list.
#pragma once

#include <string>
#include <vector>

namespace coll::trainer {

struct TrainOptions {
  std::string task = "digits";  // "digits" or "teacher"
  std::string data;             // digits CSV; empty: $COLL_DIGITS_CSV, else the build's data/digits.csv
  int epochs = 0;               // 0: 20 for digits, 3 for teacher
  size_t batch = 64;            // global batch, split evenly over the ranks
  size_t steps = 0;             // steps per epoch; 0: one pass over the training set
  std::vector<size_t> hidden = {64};  // digits: hidden layer widths
  size_t width = 256, layers = 3;     // teacher: student of `layers` dense layers of `width`
  size_t examples = 8192;             // teacher: training examples (test: a quarter)
  std::string optimizer = "adam", compress = "none", trace;
  float lr = 0;  // 0: 3e-3 for adam, 0.05 for sgd (digits); 3e-4 and 0.01 (teacher)
  bool zero = false, batch_norm = false, no_overlap = false, json = false, check_hash = false;
  bool auto_buckets = false;
  double bucket_mb = 0;       // 0: COLL_BUCKET_MB (default 25) with a 1 MiB first bucket
  double device_gflops = 0;   // >0: dense layers sleep as an accelerator of this speed would
  unsigned seed = 1;
  // Pipeline parallelism (src/trainer/pipeline_trainer.h): P stages x D replicas = the ranks.
  int stages = 1, micro_batches = 1, replicas = 0;  // replicas 0: the world size / stages
  std::string schedule = "1f1b";                    // or "gpipe"
  // Elastic data parallelism (coll_train_elastic.cc): survive a lost replica, admit new ones.
  bool elastic = false, join = false, respawn = false;
  int kill_rank = -1;      // this original rank kills itself (SIGKILL) ...
  int64_t kill_at = -1;    // ... before step kill_at: the fault the tests inject
  int64_t grow_every = 0;  // members call grow() every this many steps (0: never)
};

// Exits with status 2 and a message naming the option on bad input; --help prints the usage.
TrainOptions parseTrainOptions(int argc, char** argv);

}  // namespace coll::trainer
