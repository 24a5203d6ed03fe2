/* MPI_Allreduce / MPI_Bcast timings in nccl-tests' table format, for side-by-side runs with
 * coll's benches. Build with the MPI's own wrapper (mpicc.openmpi or mpicc.mpich).
 * usage: mpi_perf [allreduce|broadcast] MINBYTES MAXBYTES FACTOR ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double time_op(int is_bcast, float* in, float* out, int count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (is_bcast) MPI_Bcast(out, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double mine = (MPI_Wtime() - start) / iters, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return sum / n; /* mean over ranks, like nccl-tests -a 1 */
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int is_bcast = argc > 1 && strcmp(argv[1], "broadcast") == 0;
  long lo = argc > 2 ? atol(argv[2]) : 8, hi = argc > 3 ? atol(argv[3]) : 1 << 20;
  int factor = argc > 4 ? atoi(argv[4]) : 2, iters = argc > 5 ? atoi(argv[5]) : 20;
  int warmup = argc > 6 ? atoi(argv[6]) : 2;
  float* in = calloc((size_t)hi / 4 + 1, 4);
  float* out = calloc((size_t)hi / 4 + 1, 4);
  double bus = is_bcast ? 1.0 : 2.0 * (n - 1) / n;
  if (rank == 0) printf("# MPI %s, %d ranks\n#       size    time(us)   algbw   busbw\n", is_bcast ? "broadcast" : "allreduce", n);
  for (long size = lo; size <= hi; size *= factor) {
    int count = (int)(size / 4 > 0 ? size / 4 : 1);
    time_op(is_bcast, in, out, count, warmup);
    double secs = time_op(is_bcast, in, out, count, iters);
    double algbw = size / secs / 1e9;
    if (rank == 0) printf("%12ld %11.2f %7.3f %7.3f\n", size, secs * 1e6, algbw, algbw * bus);
    fflush(stdout);
    if (factor <= 1) break;
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
