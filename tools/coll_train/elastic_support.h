// What coll-train's two elastic modes share (coll_train_elastic.cc, data parallel;
// coll_train_elastic_pipeline.cc, pipeline): joining a running job, starting a replacement,
// and cutting one global batch among however many replicas there are now.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "coll/communicator.h"
#include "coll_train_common.h"
#include "coll_train_options.h"
#include "trainer/dataset.h"

namespace coll::trainer {

// Joins the job whose store COLL_STORE_ADDR names (secret: COLL_JOB_SECRET); waits at most
// `timeout` (0: COLL_TIMEOUT) for the members to grow. Throws coll::Error (Timeout) after it.
std::unique_ptr<Communicator> joinRunningJob(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// Starts this program again, told to --join, with this process's environment (the job's store
// and secret). Returns its pid, or -1 (after saying why).
pid_t spawnReplacement(char** argv);

// Waits for the replacements this process started.
void reapReplacements(const std::vector<pid_t>& pids);

// The training set shuffled once: step s of a run takes rows s*B .. s*B+B-1 of it (wrapping).
std::vector<size_t> shuffledOrder(const Dataset& train, unsigned seed);

// Replica `replica` of `replicas`'s rows of the global batch of `step` (o.batch rows, the same
// whatever the number of replicas). Throws when the batch does not split evenly.
Batch partOfGlobalBatch(const TrainOptions& o, const Dataset& train, const std::vector<size_t>& order, int64_t step,
                        int replica, int replicas);

}  // namespace coll::trainer
