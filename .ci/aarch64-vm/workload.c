// The benign workload of the aarch64 VM check (.ci/aarch64-vm.sh): reads a file of its
// working directory, forks, the child re-executes this program to write another file there
// (created under a temporary name, then renamed), and the parent waits. Exercises openat,
// renameat, clone, execve, wait4 and exit under sbx. Also reports whether sbx's read-only
// argument region (src/tracer/guard.rs, mapped at 0x4000000000 by a syscall sbx injects before
// the first checked call of a process another task could write) is in its address space:
// the parent runs a second thread, so it must have it; the child is alone, so sbx puts its
// copies below its stack pointer and it must not.
// usage: workload [child]
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *has_region(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return "unknown";
    const char *region = "no";
    char line[256];
    while (fgets(line, sizeof line, maps))
        if (!strncmp(line, "4000000000-4004000000 r--p ", 27)) region = "yes";
    fclose(maps);
    return region;
}

static int hold[2];

static void *idle(void *x) {
    (void)x;
    char c;
    return read(hold[0], &c, 1) < 0 ? NULL : NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "child")) {
        // A path call other than an open: sbx re-points its path arguments (set_args).
        int fd = open("out.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, "written\n", 8) != 8) return 5;
        close(fd);
        if (rename("out.tmp", "out.txt") != 0) return 5;
        printf("child guard region: %s\n", has_region());
        return 0;
    }
    // A second thread: another task that could write this process's memory.
    pthread_t t;
    if (pipe(hold) != 0 || pthread_create(&t, NULL, idle, NULL) != 0) return 4;
    char buf[64];
    int fd = open("ok.txt", O_RDONLY);
    if (fd < 0) return 4;
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0 || write(1, buf, (size_t)n) != n) return 4;
    printf("guard region: %s\n", has_region());
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 6;
    if (pid == 0) {
        execl(argv[0], argv[0], "child", (char *)NULL);
        _exit(7);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 6;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 8;
    close(hold[1]);
    pthread_join(t, NULL);
    puts("workload done");
    return 0;
}
