/* The program of the VM's gdb session (.ci/aarch64-vm/init.sh, check 7), built static with
 * -g -O0. `gdb_target N` prints and returns compute(N) = N * 7 (mod 256 as an exit status);
 * without an argument it returns 0, the run the profile is learned from. The session sets a
 * breakpoint on compute, steps over the line that sets `local` and prints it: 42 for N = 6,
 * and the exit status 42, which gdb shows in octal ("exited with code 052"). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int compute(int n)
{
    int local = n * 7;
    return local;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    int r = compute(n);
    printf("gdb_target: compute(%d) = %d\n", n, r);
    return r;
}
