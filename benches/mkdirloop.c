// mkdir of a directory that exists, N times (docs/performance.md, session 22): the EEXIST
// answer sbx gives itself, and from the open memo once it has given it before.
//
//     gcc -O2 -o mkdirloop benches/mkdirloop.c
//     ./mkdirloop N DIR    # makes DIR (and its parents must exist), then mkdir(DIR) N times
//
// Prints the wall time per mkdir of the loop alone, in microseconds, on stderr.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N DIR\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    if (mkdir(argv[2], 0777) != 0 && errno != EEXIST) {
        perror(argv[2]);
        return 1;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        if (mkdir(argv[2], 0777) == 0 || errno != EEXIST) {
            fprintf(stderr, "mkdir %s: not EEXIST\n", argv[2]);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    fprintf(stderr, "%.3f\n", ns / 1e3 / n);
    return 0;
}
