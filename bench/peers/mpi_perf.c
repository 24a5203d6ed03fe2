/* MPI_Allreduce / MPI_Bcast / MPI_Allgather / MPI_Reduce_scatter_block timings in nccl-tests'
 * table format, for side-by-side runs with coll's benches. Build with the MPI's own wrapper
 * (mpicc.openmpi or mpicc.mpich).
 *
 * usage: mpi_perf OP MINBYTES MAXBYTES FACTOR ITERS WARMUP [CHECK]
 *        mpi_perf OP --plan SIZE:ITERS:WARMUP[,SIZE:ITERS:WARMUP...] [CHECK]
 * OP: allreduce | broadcast | allgather | reduce_scatter (float32, sum, root 0).
 * SIZE is nccl-tests' size: the whole buffer (all-gather's output, reduce-scatter's input).
 * The plan form gives each size its own iteration count, so one launch can cover 8 B and
 * 64 MiB without thousands of 64 MiB ops. CHECK=1 runs each op once more on fresh data and
 * counts wrong elements (the #wrong column, summed over ranks), as nccl-tests -c 1 does.
 * Beyond nccl-tests' columns: the median and 99th percentile of the per-op times (every
 * rank's, pooled) and the CPU-seconds (user + system) all ranks spent per GB of buffer.
 * MPI_PERF_INPLACE=1: in place (MPI_IN_PLACE): all-reduce and all-gather in the output buffer,
 * reduce-scatter's result in the first chunk of its input, as nccl-tests' in-place columns. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

enum Op { ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER };

typedef struct {
  long size;
  int iters, warmup;
} Step;

static enum Op parse_op(const char* name) {
  if (strcmp(name, "broadcast") == 0) return BROADCAST;
  if (strcmp(name, "allgather") == 0) return ALLGATHER;
  if (strcmp(name, "reduce_scatter") == 0) return REDUCE_SCATTER;
  if (strcmp(name, "allreduce") == 0) return ALLREDUCE;
  fprintf(stderr, "mpi_perf: unknown op %s\n", name);
  exit(2);
}

/* nccl-tests' bus bandwidth factors: what each rank's link must carry per algbw byte. */
static double bus_factor(enum Op op, int n) {
  if (op == ALLREDUCE) return 2.0 * (n - 1) / n;
  if (op == BROADCAST) return 1.0;
  return (double)(n - 1) / n;
}

/* Elements each rank sends (per_rank: elements of one rank's chunk). */
static long send_count(enum Op op, long per_rank, int n) {
  return op == REDUCE_SCATTER ? per_rank * n : per_rank;
}

static long recv_count(enum Op op, long per_rank, int n) {
  return op == ALLGATHER ? per_rank * n : per_rank;
}

/* Elements per rank chunk for a whole-buffer size (all-reduce/broadcast: one chunk). */
static long chunk_elements(enum Op op, long size, int n) {
  long total = size / 4 > 0 ? size / 4 : 1;
  if (op == ALLGATHER || op == REDUCE_SCATTER) return total / n > 0 ? total / n : 1;
  return total;
}

static int in_place = 0; /* MPI_PERF_INPLACE */

static void run_once_in_place(enum Op op, float* in, float* out, int count) {
  switch (op) {
    case ALLREDUCE: MPI_Allreduce(MPI_IN_PLACE, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BROADCAST: MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case ALLGATHER:
      MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case REDUCE_SCATTER:
      MPI_Reduce_scatter_block(MPI_IN_PLACE, in, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

static void run_once(enum Op op, float* in, float* out, long per_rank) {
  int count = (int)per_rank;
  if (in_place) {
    run_once_in_place(op, in, out, count);
    return;
  }
  switch (op) {
    case ALLREDUCE: MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BROADCAST: MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER:
      MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Nearest-rank q-quantile of n sorted samples. */
static double quantile(const double* sorted, int n, double q) {
  int k = (int)ceil(q * n);
  return sorted[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* What time_op measured: the mean time per op over ranks (nccl-tests -a 1); the median and
 * 99th percentile of every rank's per-op times pooled; all ranks' CPU-seconds per op. */
typedef struct {
  double mean, p50, p99, cpu;
} Timing;

static Timing time_op(enum Op op, float* in, float* out, long per_rank, int iters) {
  int n, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Timing t = {0, 0, 0, 0};
  if (iters < 1) return t;
  double* mine = malloc(sizeof(double) * (size_t)iters);
  double* all = rank == 0 ? malloc(sizeof(double) * (size_t)iters * (size_t)n) : NULL;
  MPI_Barrier(MPI_COMM_WORLD);
  double cpu_start = cpu_seconds(), start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    double op_start = MPI_Wtime();
    run_once(op, in, out, per_rank);
    mine[i] = MPI_Wtime() - op_start;
  }
  double mean = (MPI_Wtime() - start) / iters, cpu = cpu_seconds() - cpu_start, sum = 0, cpu_sum = 0;
  MPI_Allreduce(&mean, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Gather(mine, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  t.mean = sum / n;
  t.cpu = cpu_sum / iters;
  if (rank == 0) {
    qsort(all, (size_t)iters * (size_t)n, sizeof(double), by_value);
    t.p50 = quantile(all, iters * n, 0.5);
    t.p99 = quantile(all, iters * n, 0.99);
  }
  free(mine);
  free(all);
  return t;
}

/* Small integers, so float sums over any rank count stay exact. */
static float pattern(int rank, long i) { return (float)((rank + 1) * (int)(i % 13 + 1)); }

static float expected(enum Op op, int rank, int n, long per_rank, long i) {
  float ranks_sum = (float)(n * (n + 1) / 2);
  switch (op) {
    case ALLREDUCE: return ranks_sum * (float)(i % 13 + 1);
    case BROADCAST: return pattern(0, i);
    case ALLGATHER: return pattern((int)(i / per_rank), i % per_rank);
    case REDUCE_SCATTER: return ranks_sum * (float)((rank * per_rank + i) % 13 + 1);
  }
  return 0;
}

/* One op on freshly written data; returns wrong elements summed over ranks. In place, the
 * input is written where the op reads it (all-reduce: the output; all-gather: this rank's
 * chunk of the output) and reduce-scatter's result is read from its input's first chunk. */
static long check_op(enum Op op, float* in, float* out, long per_rank, int rank, int n) {
  long sends = send_count(op, per_rank, n), recvs = recv_count(op, per_rank, n);
  for (long i = 0; i < sends; ++i) in[i] = pattern(rank, i);
  for (long i = 0; i < recvs; ++i) out[i] = op == BROADCAST && rank == 0 ? pattern(0, i) : -1.0f;
  if (in_place && op == ALLREDUCE)
    for (long i = 0; i < recvs; ++i) out[i] = pattern(rank, i);
  if (in_place && op == ALLGATHER)
    for (long i = 0; i < per_rank; ++i) out[rank * per_rank + i] = pattern(rank, i);
  run_once(op, in, out, per_rank);
  const float* result = in_place && op == REDUCE_SCATTER ? in : out;
  long wrong = 0, total = 0;
  for (long i = 0; i < recvs; ++i) wrong += result[i] != expected(op, rank, n, per_rank, i);
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

/* "SIZE:ITERS:WARMUP,..." -> steps; returns how many. */
static int parse_plan(char* text, Step* steps, int max_steps) {
  int count = 0;
  for (char* item = strtok(text, ","); item && count < max_steps; item = strtok(NULL, ",")) {
    Step s = {0, 1, 0};
    if (sscanf(item, "%ld:%d:%d", &s.size, &s.iters, &s.warmup) < 1) return -1;
    steps[count++] = s;
  }
  return count;
}

static int geometric_plan(char** argv, int argc, Step* steps, int max_steps) {
  long lo = argc > 2 ? atol(argv[2]) : 8, hi = argc > 3 ? atol(argv[3]) : 1 << 20;
  int factor = argc > 4 ? atoi(argv[4]) : 2, iters = argc > 5 ? atoi(argv[5]) : 20;
  int warmup = argc > 6 ? atoi(argv[6]) : 2, count = 0;
  for (long size = lo; size <= hi && count < max_steps; size *= factor) {
    steps[count++] = (Step){size, iters, warmup};
    if (factor <= 1) break;
  }
  return count;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  enum Op op = parse_op(argc > 1 ? argv[1] : "allreduce");
  in_place = getenv("MPI_PERF_INPLACE") && atoi(getenv("MPI_PERF_INPLACE"));
  Step steps[64];
  int plan_form = argc > 3 && strcmp(argv[2], "--plan") == 0;
  int nsteps = plan_form ? parse_plan(argv[3], steps, 64) : geometric_plan(argv, argc, steps, 64);
  int check = plan_form ? (argc > 4 && atoi(argv[4])) : (argc > 7 && atoi(argv[7]));
  if (nsteps < 1) {
    if (rank == 0) fprintf(stderr, "mpi_perf: bad size plan\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long biggest = 0;
  for (int s = 0; s < nsteps; ++s) biggest = steps[s].size > biggest ? steps[s].size : biggest;
  long elements = chunk_elements(op, biggest, n) * n + 1;
  float* in = calloc((size_t)elements, 4);
  float* out = calloc((size_t)elements, 4);
  if (rank == 0)
    printf("# MPI %s%s, %d ranks\n#       size    time(us)   algbw   busbw  #wrong     p50(us)     p99(us)  cpu(s)/GB\n",
           argv[1], in_place ? " in place" : "", n);
  long failures = 0;
  for (int s = 0; s < nsteps; ++s) {
    long per_rank = chunk_elements(op, steps[s].size, n);
    long bytes = 4 * (send_count(op, per_rank, n) > recv_count(op, per_rank, n)
                          ? send_count(op, per_rank, n) : recv_count(op, per_rank, n));
    (void)time_op(op, in, out, per_rank, steps[s].warmup);
    Timing t = time_op(op, in, out, per_rank, steps[s].iters);
    double secs = t.mean;
    long wrong = check ? check_op(op, in, out, per_rank, rank, n) : -1;
    failures += wrong > 0;
    double algbw = bytes / secs / 1e9;
    if (rank == 0) {
      char wrong_text[24] = "N/A";
      if (wrong >= 0) snprintf(wrong_text, sizeof wrong_text, "%ld", wrong);
      printf("%12ld %11.2f %7.3f %7.3f %7s %11.2f %11.2f %10.4g\n", bytes, secs * 1e6, algbw,
             algbw * bus_factor(op, n), wrong_text, t.p50 * 1e6, t.p99 * 1e6, t.cpu / (bytes / 1e9));
    }
    fflush(stdout);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return failures ? 1 : 0;
}
