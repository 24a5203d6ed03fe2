// Collectives where every transfer is one hop between the two ranks that care, n-chunk
// buffers with chunk c belonging to rank c (p.count is the whole n-chunk count):
//  - all-to-all: input chunk c goes to rank c; output chunk c comes from rank c.
//  - gather: every rank's chunk (its input, shifted to chunk r's offset) lands in the root's
//    output chunk r.
//  - scatter: the root's input chunk c lands in rank c's output (shifted likewise).
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildDirectAlltoall(const BuildParams& p);
Schedule buildDirectGather(const BuildParams& p);
Schedule buildDirectScatter(const BuildParams& p);
// Reduce-scatter: chunk c of every rank's input to rank c, reduced there as it arrives; chosen
// only by a COLL_ALGO rule (direct_reduce_scatter.cc says where it wins and where it loses).
Schedule buildDirectReduceScatter(const BuildParams& p);

// Point-to-point: one message of p.count elements to or from p.root (the peer).
Schedule buildSend(const BuildParams& p);
Schedule buildRecv(const BuildParams& p);

// One schedule running several ops' schedules side by side (step i of part k gets op_index k),
// so grouped sends and receives progress together. Per-peer order follows the parts' order.
Schedule fuseSchedules(std::vector<Schedule> parts);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction directExchange(const Fabric& x);
}  // namespace coll::algo::cost
