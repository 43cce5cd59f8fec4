// The register-saving call inside an exported assembly entry (driver/dlsym.cpp,
// python/cpython_install.cpp): glibc's dlsym and dlopen find their caller from the return
// address, so their entries must tail-jump to the real function, and the C++ they consult on the
// way has to be called without losing the caller's two argument registers.
//
// PT_ENTRY_CALL(fn) calls `fn` with the arguments saved; after it, fn's result is in rax (x86-64)
// or x0 and x1 (aarch64) and the arguments are back in their registers, except on aarch64, where
// they and the frame stay on the stack until PT_ENTRY_RESTORE (so the entry can still choose
// between a jump and a return).
#pragma once

#if defined(__x86_64__)
// Two pushes and 8 bytes more keep the stack 16-byte aligned across the call.
#define PT_ENTRY_CALL(fn)            \
  "  pushq %rdi\n"                   \
  "  .cfi_adjust_cfa_offset 8\n"     \
  "  pushq %rsi\n"                   \
  "  .cfi_adjust_cfa_offset 8\n"     \
  "  subq $8, %rsp\n"                \
  "  .cfi_adjust_cfa_offset 8\n"     \
  "  call " fn "\n"                  \
  "  addq $8, %rsp\n"                \
  "  .cfi_adjust_cfa_offset -8\n"    \
  "  popq %rsi\n"                    \
  "  .cfi_adjust_cfa_offset -8\n"    \
  "  popq %rdi\n"                    \
  "  .cfi_adjust_cfa_offset -8\n"
#elif defined(__aarch64__)
// The link register is saved with the frame pointer: the call overwrites it, and the entry must
// leave with the caller's.
#define PT_ENTRY_CALL(fn)            \
  "  stp x29, x30, [sp, -32]!\n"     \
  "  .cfi_def_cfa_offset 32\n"       \
  "  .cfi_offset 29, -32\n"          \
  "  .cfi_offset 30, -24\n"          \
  "  mov x29, sp\n"                  \
  "  stp x0, x1, [sp, 16]\n"         \
  "  bl " fn "\n"
// The caller's arguments, frame pointer and link register back (the CFI is the entry's).
#define PT_ENTRY_RESTORE             \
  "  ldp x0, x1, [sp, 16]\n"         \
  "  ldp x29, x30, [sp], 32\n"
#endif
