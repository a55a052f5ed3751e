// nulltrace: the floor of any ptrace + seccomp sandbox. Runs COMMAND under a seccomp filter
// that stops (SECCOMP_RET_TRACE) on the syscall numbers given, follows every fork, vfork
// and clone, and resumes each stop at once without looking at it. What it costs over bare is
// the price of the stops themselves; what sbx costs above it is sbx's own work.
// usage: nulltrace [-w] NR[,NR...] COMMAND [ARG...]     (x86_64 and aarch64)
//
// -w: the floor of sbx's design rather than of any design. At each seccomp stop it also does
// the kernel-side work that a race-free check of a path argument needs, and nothing else (no
// decision, no lookups): PTRACE_GET_SYSCALL_INFO, a process_vm_readv of the path argument (up
// to 256 bytes, never across a page), a process_vm_writev of those bytes below the thread's
// stack pointer (where sbx's guard puts its copy in a process no other task can write), and
// PTRACE_SET_SYSCALL_INFO with the call unchanged (sbx re-points the argument at the copy).
// Needs Linux 6.16 for PTRACE_SET_SYSCALL_INFO.
// Built and run by benches/bench.py (variants "null tracer" and "design floor"); not part of
// sbx.
#define _GNU_SOURCE
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
#include <sys/uio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

#define GET_SYSCALL_INFO 0x420e
#define SET_SYSCALL_INFO 0x4212
#define INFO_SECCOMP 3

// struct ptrace_syscall_info (Linux 6.16 layout), seccomp member.
struct info {
    unsigned char op, reserved;
    unsigned short flags;
    unsigned int arch;
    unsigned long long ip, sp;
    unsigned long long nr, args[6];
    unsigned int ret_data, reserved2;
};

static int user_pointer(unsigned long long a) { return a >= 4096 && a < (1ULL << 47); }

// The work of -w at one seccomp stop of thread p (see the top of the file).
static void work(pid_t p) {
    struct info in;
    memset(&in, 0, sizeof in);
    if (ptrace(GET_SYSCALL_INFO, p, (void *)sizeof in, &in) <= 0 || in.op != INFO_SECCOMP) return;
    // The path argument: the second for the *at calls, else the first.
    unsigned long long at = user_pointer(in.args[1]) ? in.args[1] : in.args[0];
    char buf[256];
    size_t len = 0;
    if (user_pointer(at)) {
        size_t want = 4096 - (at % 4096);
        if (want > sizeof buf) want = sizeof buf;
        struct iovec l = {buf, want}, r = {(void *)at, want};
        ssize_t got = process_vm_readv(p, &l, 1, &r, 1, 0);
        if (got > 0) {
            char *nul = memchr(buf, 0, (size_t)got);
            len = nul ? (size_t)(nul - buf) + 1 : (size_t)got;
        }
    }
    if (len > 0 && in.sp > 4096 + 512) {
        struct iovec l = {buf, len}, r = {(void *)(in.sp - 256 - len), len};
        process_vm_writev(p, &l, 1, &r, 1, 0);
    }
    in.reserved = 0;
    in.flags = 0;
    in.ret_data = 0;
    in.reserved2 = 0;
    ptrace(SET_SYSCALL_INFO, p, (void *)sizeof in, &in);
}

int main(int argc, char **argv) {
    int with_work = argc > 1 && strcmp(argv[1], "-w") == 0;
    if (with_work) {
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: nulltrace [-w] NR[,NR...] COMMAND [ARG...]\n");
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
        if (with_work && sig == SIGTRAP && (st >> 16) == PTRACE_EVENT_SECCOMP) work(p);
        // Events (seccomp, fork, exec...) and the initial SIGSTOP of new children: resume as is.
        if ((st >> 16) != 0 || sig == SIGTRAP || sig == SIGSTOP) sig = 0;
        ptrace(PTRACE_CONT, p, 0, sig);
    }
    return code;
}
