// What coll-train's data-parallel and pipeline runs share: the task's data, the model's
// layers, the update strategy, and gathering every rank's text (Chrome traces).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coll/communicator.h"
#include "coll_train_options.h"
#include "trainer/dataset.h"
#include "trainer/layer.h"
#include "trainer/pipeline_trainer.h"
#include "trainer/update_strategy.h"

namespace coll::trainer {

struct Task {
  Dataset train, test;
  size_t train_total = 0;
};

// Shard `shard` of `shards` of the task's training and test sets.
Task loadTask(const TrainOptions& o, int shard, int shards);

// The whole model's layers, unbuilt (comm: cross-replica batch norm's, may be null).
std::vector<std::unique_ptr<Layer>> modelLayers(const TrainOptions& o, Communicator* comm);

std::unique_ptr<UpdateStrategy> makeUpdate(const TrainOptions& o);

// The pipeline's stages, micro-batches, schedule, input width, seed and buckets, from the options.
PipelineOptions pipelineOptionsFrom(const TrainOptions& o);

// Every rank's string, on every rank (two all-gathers: lengths, then the padded bytes).
std::vector<std::string> allgatherStrings(Communicator& comm, const std::string& mine);

// Runs coll-train --elastic (coll_train_elastic.cc); argv: to start a replacement.
int runElastic(const TrainOptions& o, char** argv);

// Runs coll-train --elastic --stages P (coll_train_elastic_pipeline.cc); argv as above.
int runElasticPipeline(const TrainOptions& o, char** argv);

// Runs coll-train's --stages P pipeline (coll_train_pipeline.cc).
int runPipeline(const TrainOptions& o, Communicator& world);

}  // namespace coll::trainer
