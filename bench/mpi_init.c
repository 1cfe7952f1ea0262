// MPI started and stopped, nothing else: what `mpirun -n N` costs a program
// before it does any work, the start-up that bench/mpi.sh adds to a plain
// run. Threading level Multiple, as fnd and fdu ask for.
// Build: mpicc -O2 -o mpi_init mpi_init.c (bench/mpi.sh does)   Run: mpirun -n N mpi_init
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int provided;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_init: MPI_Init_thread failed\n");
        return 1;
    }
    return MPI_Finalize() == MPI_SUCCESS ? 0 : 1;
}
