// Turns the ledgers of every rank into the sentence an error message carries: which ranks
// never reached the failed op, where each of them is instead, which are in it with a
// different call, which did not answer. Pure formatting: unit-tested without processes.
#pragma once

#include <string>
#include <vector>

#include "comm/ledger_exchange.h"

namespace coll {

// e.g. "ranks 5, 9 (host h3) have not started it: rank 5 is still in broadcast #1041, rank 9
// has not called it (last finished allreduce #1041); rank 7 did not answer (stopped or
// dead); ranks 0-4, 6, 8 are in it too". host_of_rank may be empty (then hosts are omitted).
std::string describeStall(const LedgerEntry& failed_op, int self, const LedgerAnswers& answers,
                          const std::vector<std::string>& host_of_rank);

// "5", "5 and 9", "0-4, 6 and 8": how a list of ranks reads in a message.
std::string rankList(const std::vector<int>& ranks);

}  // namespace coll
