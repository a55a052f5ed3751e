// Create N new files in DIR, one open(O_CREAT|O_EXCL) and close each, and print the wall
// time per file in microseconds on stderr, measured around the loop alone (docs/performance.md,
// session 23): the latency of a stop that makes a name, without the start of sbx or the
// removal of the files between runs.
//
//     gcc -O2 -o createloop benches/createloop.c
//     ./createloop N DIR    # DIR must exist and hold none of f0 .. f(N-1)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N DIR\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    char p[4096];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/f%d", argv[2], i);
        int fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644);
        if (fd < 0) {
            perror(p);
            return 1;
        }
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    fprintf(stderr, "%.3f\n", ns / 1e3 / n);
    return 0;
}
