/* The non-I/O tax's per-operation cost in its least disturbed batches: a
 * machine shared with other work preempts most long loops (perf bench's
 * totals then measure the others' load), but many short batches include some
 * that ran undisturbed, and the fastest of them is the operation's own cost.
 * tests/bench/non_io_tax.py runs it beside perf bench in every mode.
 *
 *   iodiag_bench_noniotax_probe getppid|pipe [BATCHES [OPS_PER_BATCH]]
 * prints "min_ns p10_ns median_ns" per operation (a getppid() call; a pipe
 * round trip between two processes: two context switches and wake-ups). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "getppid") && strcmp(argv[1], "pipe"))) {
        fprintf(stderr, "usage: %s getppid|pipe [BATCHES [OPS_PER_BATCH]]\n", argv[0]);
        return 2;
    }
    const int pipe_mode = !strcmp(argv[1], "pipe");
    const int batches = argc > 2 ? atoi(argv[2]) : (pipe_mode ? 400 : 2000);
    const int ops = argc > 3 ? atoi(argv[3]) : (pipe_mode ? 20 : 500);
    double *per_op = calloc(batches, sizeof(double));
    int to_child[2], to_parent[2];
    pid_t child = -1;
    char c = 'x';
    if (!per_op || batches <= 0 || ops <= 0) return 2;
    if (pipe_mode) {
        if (pipe(to_child) || pipe(to_parent)) return 1;
        child = fork();
        if (child == 0) {   /* echoes every byte back until the parent closes its end */
            close(to_child[1]);
            close(to_parent[0]);
            while (read(to_child[0], &c, 1) == 1)
                if (write(to_parent[1], &c, 1) != 1) break;
            _exit(0);
        }
        close(to_child[0]);
        close(to_parent[1]);
    }
    for (int b = 0; b < batches; b++) {
        long long t0 = now_ns();
        for (int i = 0; i < ops; i++) {
            if (!pipe_mode) {
                syscall(SYS_getppid);
            } else if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1) {
                return 1;
            }
        }
        per_op[b] = (double)(now_ns() - t0) / ops;
    }
    if (pipe_mode) {
        close(to_child[1]);
        waitpid(child, NULL, 0);
    }
    qsort(per_op, batches, sizeof(double), cmp);
    printf("%.1f %.1f %.1f\n", per_op[0], per_op[batches / 10], per_op[batches / 2]);
    return 0;
}
