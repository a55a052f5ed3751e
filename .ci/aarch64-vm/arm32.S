@ An AArch32 (compat arm32 ABI) program for the aarch64 VM check (.ci/aarch64-vm.sh): opens
@ /tmp/t/secret/secret.txt and copies it to stdout with arm32 syscalls (svc #0, number in r7:
@ open 5, read 3, write 4, exit 1). Bare it prints the secret; under sbx its first syscall
@ must be killed by the filter's architecture check (AUDIT_ARCH_ARM is not AUDIT_ARCH_AARCH64).
    .arm
    .text
    .global _start
_start:
    adr     r0, path
    mov     r1, #0              @ O_RDONLY
    mov     r7, #5              @ open
    svc     #0
    cmp     r0, #0
    blt     fail
    sub     sp, sp, #256
    mov     r1, sp
    mov     r2, #255
    mov     r7, #3              @ read
    svc     #0
    cmp     r0, #0
    ble     fail
    mov     r2, r0
    mov     r0, #1
    mov     r1, sp
    mov     r7, #4              @ write
    svc     #0
    mov     r0, #0
    mov     r7, #1              @ exit
    svc     #0
fail:
    mov     r0, #4
    mov     r7, #1
    svc     #0
path:
    .asciz  "/tmp/t/secret/secret.txt"
