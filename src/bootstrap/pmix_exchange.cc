// The PMIx client (pmix_exchange.h), over libpmix (Debian libpmix-dev, PMIx 4.2). Compiled only
// when CMake found it; pmix_exchange_stub.cc stands in otherwise.
#include "bootstrap/pmix_exchange.h"

#include <pmix.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

// Shared between the caller and the helper thread, which may outlive the call after a timeout.
struct Exchange {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string step = "PMIx_Init";  // the call in progress, for a timeout's message
  Status status;
  PmixJob job;
  std::string value;

  void enter(const char* s) {
    std::lock_guard<std::mutex> lock(mu);
    step = s;
  }
};

// "PMIX_NAMESPACE=x, PMIX_RANK=0, PMIX_SERVER_URI41=pmix-server.123;tcp4://127.0.0.1:4242":
// what pointed this process at a server.
std::string serverVariables() {
  std::string out;
  for (const char* name : {"PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                           "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    if (!out.empty()) out += ", ";
    out += std::string(name) + "=" + v;
    if (std::strncmp(name, "PMIX_SERVER_URI", 15) == 0) return out;  // the newest one is enough
  }
  return out + (out.empty() ? "" : ", ") + "no PMIX_SERVER_URI* variable";
}

Status failed(const std::string& launcher, const char* call, pmix_status_t rc, const std::string& what) {
  return transportError(format("%s: %s failed (%s) %s; the launcher's PMIx server was given by %s",
                               launcher.c_str(), call, PMIx_Error_string(rc), what.c_str(),
                               serverVariables().c_str()));
}

// A job-level number (PMIX_JOB_SIZE, PMIX_LOCAL_RANK); -1 when the server does not have it.
int getNumber(const pmix_proc_t& proc, const char* key) {
  pmix_value_t* val = nullptr;
  if (PMIx_Get(&proc, key, nullptr, 0, &val) != PMIX_SUCCESS || !val) return -1;
  pmix_status_t rc;
  int n = -1;
  PMIX_VALUE_GET_NUMBER(rc, val, n, int);
  PMIX_VALUE_RELEASE(val);
  return rc == PMIX_SUCCESS ? n : -1;
}

// PMIX_TIMEOUT in whole seconds, at least 1 (0 means "never" to PMIx).
int timeoutSeconds(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now()).count();
  return left < 1 ? 1 : static_cast<int>(left);
}

Status putRank0(const std::string& launcher, const std::string& key, const std::string& value) {
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  pmix_status_t rc = PMIx_Value_load(&v, value.c_str(), PMIX_STRING);
  if (rc == PMIX_SUCCESS) rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  PMIX_VALUE_DESTRUCT(&v);
  if (rc != PMIX_SUCCESS) return failed(launcher, "PMIx_Put", rc, "publishing " + key + " from rank 0");
  rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) return failed(launcher, "PMIx_Commit", rc, "publishing " + key + " from rank 0");
  return Status::ok();
}

// The fence (collecting the data) and the get of rank 0's value, both under PMIX_TIMEOUT.
Status fenceAndGet(Exchange& ex, const std::string& launcher, const pmix_proc_t& me, const std::string& key,
                   Deadline deadline) {
  int seconds = timeoutSeconds(deadline);
  bool collect = true;
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIx_Info_load(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIx_Info_load(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
  pmix_proc_t all;
  PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
  ex.enter("PMIx_Fence");
  pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
  Status st;
  if (rc != PMIX_SUCCESS) {
    st = failed(launcher, "PMIx_Fence", rc, format("(every rank of namespace %s must reach it within %d s, COLL_TIMEOUT)",
                                                   me.nspace, seconds));
  } else {
    pmix_proc_t root;
    PMIX_LOAD_PROCID(&root, me.nspace, 0);
    pmix_value_t* val = nullptr;
    ex.enter("PMIx_Get");
    rc = PMIx_Get(&root, key.c_str(), &info[1], 1, &val);
    if (rc != PMIX_SUCCESS || !val) {
      st = failed(launcher, "PMIx_Get", rc, "reading " + key + " that rank 0 put");
    } else if (val->type != PMIX_STRING || !val->data.string) {
      st = transportError(format("%s: PMIx_Get of %s from rank 0 gave a value of PMIx type %d, not a string",
                                 launcher.c_str(), key.c_str(), static_cast<int>(val->type)));
    } else {
      ex.value = val->data.string;
    }
    if (val) PMIX_VALUE_RELEASE(val);
  }
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  return st;
}

// The helper thread's body: every PMIx call of the exchange, in order.
Status run(Exchange& ex, const std::string& launcher, const std::string& key, const std::string& rank0_value,
           Deadline deadline) {
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS)
    return failed(launcher, "PMIx_Init", rc, "(PMIX_NAMESPACE is set, so the launcher's PMIx server should answer: "
                                             "has it ended?)");
  ex.enter("PMIx_Get of the job size");
  pmix_proc_t job_proc;
  PMIX_LOAD_PROCID(&job_proc, me.nspace, PMIX_RANK_WILDCARD);
  ex.job.nspace = me.nspace;
  ex.job.rank = static_cast<int>(me.rank);
  ex.job.size = getNumber(job_proc, PMIX_JOB_SIZE);
  ex.job.local_rank = getNumber(me, PMIX_LOCAL_RANK);
  Status st;
  if (me.rank == 0 && rank0_value.empty()) {
    st = invalidArgument(launcher + ": PMIx says this process is rank 0, but the launcher's variables said otherwise, "
                       "so it started no store to publish");
  } else if (me.rank == 0) {
    ex.enter("PMIx_Put");
    st = putRank0(launcher, key, rank0_value);
  }
  if (st.ok()) st = fenceAndGet(ex, launcher, me, key, deadline);
  ex.enter("PMIx_Finalize");
  PMIx_Finalize(nullptr, 0);  // coll needs PMIx no more; an MPI library in this process keeps its own reference
  return st;
}

}  // namespace

bool pmixBuilt() { return true; }

Status pmixExchange(const std::string& launcher, const std::string& key, const std::string& rank0_value,
                    Deadline deadline, PmixJob* job, std::string* value) {
  double seconds = std::chrono::duration<double>(deadline - Clock::now()).count();
  auto ex = std::make_shared<Exchange>();
  std::thread([ex, launcher, key, rank0_value, deadline] {
    Status st = run(*ex, launcher, key, rank0_value, deadline);
    std::lock_guard<std::mutex> lock(ex->mu);
    ex->status = st;
    ex->done = true;
    ex->cv.notify_all();
  }).detach();  // joined through `done`; left blocked inside libpmix only after a timeout
  std::unique_lock<std::mutex> lock(ex->mu);
  if (!ex->cv.wait_until(lock, deadline, [&] { return ex->done; })) {
    return timeoutError(format("%s: the PMIx server did not answer %s within %.0f s (COLL_TIMEOUT); %s are set, "
                               "so coll expected the launcher's PMIx server to serve this rank%s",
                               launcher.c_str(), ex->step.c_str(), seconds, serverVariables().c_str(),
                               ex->step == "PMIx_Fence" ? ", and every other rank to reach the same fence" : ""));
  }
  COLL_RETURN_IF_ERROR(ex->status);
  *job = ex->job;
  *value = ex->value;
  COLL_INFO("INIT", "%s: rank %d of %d (PMIx namespace %s) read %s from rank 0 through PMIx", launcher.c_str(),
            job->rank, job->size, job->nspace.c_str(), key.c_str());
  return Status::ok();
}

}  // namespace coll::bootstrap
