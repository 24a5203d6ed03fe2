/* A plain C program on coll's C API, built with
 *   cc consumer.c $(pkg-config --cflags --libs coll)
 * and run under any launcher (collrun -n 2 ./a.out, mpirun, srun, torchrun). */
#include <coll/coll.h>

#include <stdio.h>

int main(void) {
  collComm_t comm;
  int rank, size, version;
  collGetVersion(&version);
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "consumer.c: %s\n", collGetLastError());
    return 1;
  }
  collCommUserRank(comm, &rank);
  collCommCount(comm, &size);
  double x[5] = {rank, 1, -rank, 0.5, 1e9};
  if (collAllReduce(x, x, 5, collFloat64, collSum, comm, NULL) != collSuccess) {
    fprintf(stderr, "consumer.c: %s\n", collGetLastError());
    return 1;
  }
  double ranks = (double)size * (size - 1) / 2;
  int ok = x[0] == ranks && x[1] == size && x[2] == -ranks && x[3] == 0.5 * size && x[4] == 1e9 * size;
  printf("consumer (C, library %d, header %d) rank %d of %d: all-reduce %s\n", version, COLL_VERSION_CODE, rank,
         size, ok ? "ok" : "WRONG");
  collCommDestroy(comm);
  return ok ? 0 : 1;
}
