// PT_FORWARD(name, version): a hidden definition of `name` that tail-jumps to glibc's
// `name@version`, for glibc_compat.cpp and glibc_compat_exe.cpp. PT_V picks the version by
// architecture (aarch64's oldest is 2.17, where x86-64's vary).
#pragma once

// A tail jump leaves the caller's registers and return address untouched (dlopen, dlsym and
// dlvsym find their caller from it).
#if defined(__x86_64__)
#define PT_JUMP(target) "jmp " target "@PLT\n"
#define PT_V(x86, arm) x86
#elif defined(__aarch64__)
#define PT_JUMP(target) "b " target "\n"
#define PT_V(x86, arm) arm
#else
#error "glibc_forward.h: x86-64 and aarch64 only"
#endif

#define PT_FORWARD(name, version)                                         \
  __asm__(".text\n"                                                       \
          ".globl " #name "\n"                                            \
          ".hidden " #name "\n"                                           \
          ".type " #name ", %function\n"                                  \
          ".p2align 4\n" #name ":\n" PT_JUMP("perftracker_old_" #name)    \
          ".size " #name ", .-" #name "\n"                                \
          ".symver perftracker_old_" #name ", " #name "@" version "\n");
