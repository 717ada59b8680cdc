// The stack switch under Fiber (x86-64, System V ABI): saves the callee-saved
// registers and the floating-point control words on the current stack,
// stores the stack pointer in *from, and resumes the context saved at `to`.
// No system call: glibc's swapcontext also saves the signal mask, which costs
// a sigprocmask call per switch.
//
//   void tpu_fiber_switch(void** from, void* to);
//   void tpu_fiber_start();  // first "return address" of a new context

#if defined(__x86_64__)

        .text
        .globl  tpu_fiber_switch
        .type   tpu_fiber_switch, @function
        .p2align 4
tpu_fiber_switch:
        .cfi_startproc
        pushq   %rbp
        pushq   %rbx
        pushq   %r15
        pushq   %r14
        pushq   %r13
        pushq   %r12
        subq    $16, %rsp
        stmxcsr 8(%rsp)
        fnstcw  (%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        fldcw   (%rsp)
        ldmxcsr 8(%rsp)
        addq    $16, %rsp
        popq    %r12
        popq    %r13
        popq    %r14
        popq    %r15
        popq    %rbx
        popq    %rbp
        ret
        .cfi_endproc
        .size   tpu_fiber_switch, .-tpu_fiber_switch

// A new context's first switch "returns" here with the entry function in r13
// and its argument in r12 (see MakeContext); the entry never returns.
        .globl  tpu_fiber_start
        .type   tpu_fiber_start, @function
        .p2align 4
tpu_fiber_start:
        .cfi_startproc
        .cfi_undefined rip
        movq    %r12, %rdi
        callq   *%r13
        ud2
        .cfi_endproc
        .size   tpu_fiber_start, .-tpu_fiber_start

#else
#error "emulator/fiber supports x86-64 only"
#endif

        .section .note.GNU-stack,"",@progbits
