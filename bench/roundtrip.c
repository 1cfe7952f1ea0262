// A cache line's round trip between two threads, in nanoseconds: each thread
// waits for the other's write to one shared counter, then writes it back.
//
// Why: on a virtual machine the host places the virtual cores near each
// other (sharing a cache: 55-140 ns here) or not (330-580 ns, 800-1,300 ns
// at other minutes), and moves them within seconds. A walk whose threads
// share lines (the ordered walk: one heap, one release, buffers read on one
// core and written on the other) pays for each line moved, the unordered
// walk hardly at all: `fnd --sort name` against `fnd -u` on /usr measured
// 1.19x in rounds at ~100 ns, 1.42x at ~330 ns and 1.22x at ~1,000 ns. The
// figure says the machine changed, not by how much a walk will.
// bench/ab.py --roundtrip tags each round with it.
//
// Build: cc -O2 -pthread -o roundtrip roundtrip.c (build_helpers does)
// Run: roundtrip    prints the median of 5 runs of 20,000 round trips.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 20000
#define RUNS 5

static _Atomic long turn;

static void *answer(void *arg) {
    (void)arg;
    for (long i = 0; i < TRIPS; i++) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&turn, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double one_run(void) {
    pthread_t other;
    struct timespec start, end;
    atomic_store(&turn, 0);
    if (pthread_create(&other, NULL, answer, NULL) != 0) {
        perror("pthread_create");
        exit(2);
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < TRIPS; i++) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i) {
        }
        atomic_store_explicit(&turn, 2 * i + 1, memory_order_release);
    }
    pthread_join(other, NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    return ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / TRIPS;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    double runs[RUNS];
    for (int i = 0; i < RUNS; i++) {
        runs[i] = one_run();
    }
    qsort(runs, RUNS, sizeof runs[0], by_value);
    printf("%.0f\n", runs[RUNS / 2]);
    return 0;
}
