// Per-stop cost microbenchmark: N x open(PATH, O_RDONLY) + close, timed inside the process,
// printed as ns per open. Each open is one checked syscall (a seccomp stop and an exit stop
// under sbx record and strace --seccomp-bpf); close runs in-kernel.
//   gcc -O2 -o /tmp/openloop benches/openloop.c
//   /tmp/openloop 200000 /tmp/a/b/c/d/e/f                                  # bare
//   strace -f -qq --seccomp-bpf -e trace=openat -o /dev/null /tmp/openloop 20000 PATH
//   target/release/sbx record -o /tmp/t.bin -- /tmp/openloop 20000 PATH
//   (prefix each with `taskset -c 0` to put tracer and tracee on one CPU)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: openloop N PATH\n");
        return 2;
    }
    long n = atol(argv[1]);
    const char *path = argv[2];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    fprintf(stderr, "%.0f ns/open\n", n > 0 ? ns / (double)n : 0.0);
    return 0;
}
