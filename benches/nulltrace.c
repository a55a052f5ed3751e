// nulltrace: the floor of any ptrace + seccomp sandbox. Runs COMMAND under a seccomp filter
// that stops (SECCOMP_RET_TRACE) on the syscall numbers given, follows every fork, vfork
// and clone, and resumes each stop at once without looking at it. What it costs over bare is
// the price of the stops themselves; what sbx costs above it is sbx's own work.
// usage: nulltrace NR[,NR...] COMMAND [ARG...]     (x86_64 and aarch64)
// Built and run by benches/bench.py (variant "null tracer"); not part of sbx.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: nulltrace NR[,NR...] COMMAND [ARG...]\n");
        return 64;
    }
    int nrs[1024], n = 0;
    for (char *s = strtok(argv[1], ","); s && n < 1024; s = strtok(NULL, ",")) nrs[n++] = atoi(s);
    // load arch; kill foreign; load nr; one jeq per number -> TRACE; else ALLOW
    struct sock_filter f[8 + 1024];
    int k = 0;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (int i = 0; i < n; i++)
        f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nrs[i], (unsigned char)(n - i), 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
    struct sock_fprog prog = {.len = (unsigned short)k, .filter = f};

    pid_t child = fork();
    if (child == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
            perror("seccomp");
            _exit(126);
        }
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int st;
    waitpid(child, &st, 0);
    ptrace(PTRACE_SETOPTIONS, child, 0,
           PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
               PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
    ptrace(PTRACE_CONT, child, 0, 0);
    int code = 0;
    for (;;) {
        pid_t p = waitpid(-1, &st, __WALL);
        if (p < 0) {
            if (errno == EINTR) continue;
            break;  // ECHILD: all gone
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (p == child) code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            continue;
        }
        int sig = WSTOPSIG(st);
        // Events (seccomp, fork, exec...) and the initial SIGSTOP of new children: resume as is.
        if ((st >> 16) != 0 || sig == SIGTRAP || sig == SIGSTOP) sig = 0;
        ptrace(PTRACE_CONT, p, 0, sig);
    }
    return code;
}
