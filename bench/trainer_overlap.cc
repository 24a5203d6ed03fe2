// Step time of data-parallel training with one all-reduce after backward against bucketed
// all-reduces that overlap backward, in the same run on the same model (an MLP of --layers
// dense layers of --width; synthetic data). Modes run in interleaved rounds; medians per mode.
//
//   build/bin/trainer_overlap [--layers 12] [--width 768] [--batch 32] [--steps 5] [--rounds 3]
//                             [--modes single,ddp,auto] [--trace PREFIX] [--device-gflops X]
//
// --device-gflops X replaces each dense layer's arithmetic by a sleep of its FLOPs / X (forward
// 2*b*in*out, backward twice that), as if the layer ran on an accelerator while the CPU waits:
// the CPUs then serve communication only, as on a GPU node. Without it the layers compute on
// the CPU, and on a machine with fewer cores than ranks the communication's CPU work (kernel
// TCP, reductions) slows the overlapped backward down.
//
// Modes: single (one bucket, launched when backward ends), ddp (1 MiB first bucket, then
// COLL_BUCKET_MB, default 25 MiB), auto (sized from measured backward time and all-reduce
// throughput, bucket_sizing.h), and "mb=X" (a fixed X MiB cap). Prints, on rank 0, each mode's
// median step time, median backward time, the all-reduce time of the single mode, and the
// fraction of communication time hidden under backward (per step: the union of bucket
// all-reduce intervals intersected with the backward interval, over the union).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "trainer/dense.h"
#include "tasks/device_timed_dense.h"
#include "trainer/mlp.h"
#include "trainer/relu.h"
#include "trainer/replicated_update.h"
#include "trainer/sgd.h"
#include "trainer/step_figures.h"
#include "trainer/trainer.h"

using namespace coll::trainer;

namespace {

struct Options {
  size_t layers = 12, width = 768, batch = 32;
  int steps = 5, rounds = 3;
  std::vector<std::string> modes = {"single", "ddp", "auto"};
  std::string trace;
  double device_gflops = 0;  // 0: compute on the CPU
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--layers") o.layers = std::stoul(v);
    else if (a == "--width") o.width = std::stoul(v);
    else if (a == "--batch") o.batch = std::stoul(v);
    else if (a == "--steps") o.steps = std::stoi(v);
    else if (a == "--rounds") o.rounds = std::stoi(v);
    else if (a == "--trace") o.trace = v;
    else if (a == "--device-gflops") o.device_gflops = std::stod(v);
    else if (a == "--modes") {
      o.modes.clear();
      for (size_t p = 0; p <= v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        o.modes.push_back(v.substr(p, q - p));
        p = q + 1;
      }
    } else {
      std::fprintf(stderr, "trainer_overlap: unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

struct Mode {
  std::string name;
  std::unique_ptr<Model> model;
  std::unique_ptr<Trainer> trainer;
  std::vector<StepFigures> figures;
  std::string plan;
};

std::unique_ptr<Mode> makeMode(const std::string& name, const Options& o, coll::Communicator& comm, const Batch& batch) {
  auto m = std::make_unique<Mode>();
  m->name = name;
  m->model = std::make_unique<Model>();
  if (o.device_gflops > 0) {
    for (size_t l = 0; l < o.layers; ++l) {
      m->model->add(std::make_unique<DeviceTimedDense>(o.width, o.width, o.device_gflops));
      if (l + 1 < o.layers) m->model->add(std::make_unique<Relu>());
    }
    m->model->build(1);
  } else {
    std::vector<size_t> hidden(o.layers - 1, o.width);
    buildMlp(*m->model, {o.width, hidden, o.width, false}, nullptr, 1);
  }
  TrainerOptions options;
  if (name == "single") options.buckets.single_bucket = true;
  if (name.rfind("mb=", 0) == 0)
    options.buckets.bucket_bytes = options.buckets.first_bucket_bytes = static_cast<size_t>(std::stod(name.substr(3)) * (1 << 20));
  auto update = std::make_unique<ReplicatedUpdate>(std::make_unique<SgdMomentum>(1e-4f), nullptr);
  m->trainer = std::make_unique<Trainer>(comm, *m->model, std::move(update), options);
  if (name == "auto") {
    BucketSizingResult r = m->trainer->autoSizeBuckets(batch);
    m->plan = "predicted exposed " + std::to_string(r.predicted_exposed_seconds * 1e3) + " ms; ";
  }
  m->plan += std::to_string(m->trainer->buckets().size()) + " buckets";
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  auto comm = coll::Communicator::fromEnvironment();
  Batch batch;
  batch.features.resize(o.batch, o.width);
  for (size_t i = 0; i < batch.features.data.size(); ++i) batch.features.data[i] = std::sin(0.01f * i + comm->rank());
  for (size_t i = 0; i < o.batch; ++i) batch.labels.push_back(static_cast<int>((i * 7 + comm->rank()) % o.width));
  std::vector<std::unique_ptr<Mode>> modes;
  for (const std::string& name : o.modes) modes.push_back(makeMode(name, o, *comm, batch));
  for (int round = 0; round < o.rounds; ++round) {
    for (auto& m : modes) {
      m->trainer->timeline().clear();
      m->trainer->run(o.steps + 1, [&](int64_t) { return batch; });
      std::vector<StepFigures> f = analyseSteps(m->trainer->flushedTimeline());
      m->figures.insert(m->figures.end(), f.begin() + 1, f.end());  // the first step of a round warms up
    }
  }
  if (comm->rank() != 0) return 0;
  double grad_mb = static_cast<double>(modes[0]->model->grads().size_bytes()) / (1 << 20);
  std::printf("# %d ranks, %zu dense layers of %zu (%s), batch %zu per rank, %.1f MiB of gradients, %d rounds x %d steps\n",
              comm->size(), o.layers, o.width,
              o.device_gflops > 0 ? ("timed as a " + std::to_string(o.device_gflops) + " GFLOP/s device").c_str() : "CPU",
              o.batch, grad_mb, o.rounds, o.steps);
  std::printf("%-10s %12s %12s %12s %10s %10s  %s\n", "mode", "step_ms", "backward_ms", "comm_ms", "hidden", "vs_single", "plan");
  double single = 0;
  for (auto& m : modes) {
    std::vector<double> step, bw, comm_t, hid;
    for (const auto& f : m->figures) {
      step.push_back(f.step), bw.push_back(f.backward), comm_t.push_back(f.comm);
      hid.push_back(f.hiddenFraction());
    }
    if (m->name == "single") single = median(step);
    std::printf("%-10s %12.1f %12.1f %12.1f %10.3f %10.3f  %s\n", m->name.c_str(), 1e3 * median(step), 1e3 * median(bw),
                1e3 * median(comm_t), median(hid), single > 0 ? median(step) / single : 0.0, m->plan.c_str());
    if (!o.trace.empty()) m->trainer->flushedTimeline().writeChromeTrace(o.trace + "." + m->name + ".json", 0);
  }
  return 0;
}
