// An MPI rank program for test_launch: proves that ranks started through globe-launch's
// per-rank wrapper still find each other with MPI_Init.
//
//   launch_mpi_fixture sum           all-reduce of the ranks; prints "mpi R/N sum S env RANK"
//   launch_mpi_fixture abort R CODE  rank R calls MPI_Abort(CODE) after a barrier; others wait
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc >= 2 && std::strcmp(argv[1], "sum") == 0) {
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const char* env_rank = std::getenv("RANK");
    std::printf("mpi %d/%d sum %d env %s\n", rank, size, sum, env_rank ? env_rank : "unset");
    std::fflush(stdout);
  } else if (argc >= 4 && std::strcmp(argv[1], "abort") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == std::atoi(argv[2])) MPI_Abort(MPI_COMM_WORLD, std::atoi(argv[3]));
    MPI_Barrier(MPI_COMM_WORLD);  // the others block here until they are stopped
  } else {
    std::fprintf(stderr, "launch_mpi_fixture: bad arguments\n");
    MPI_Finalize();
    return 100;
  }
  MPI_Finalize();
  return 0;
}
