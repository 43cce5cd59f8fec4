// Exports one hook per version node of its library, so each call reaches the library its caller
// was linked against.
//
// glibc lets an unversioned definition satisfy a versioned reference: with one plain
// `cudaLaunchKernel`, a library linked against libcudart.so.12 and another against .so.13 would
// both bind to it and be forwarded to whichever runtime comes first. Instead the hook `name` is
// defined as a template over the node (`versioned::name<kNode>`, forwarding to
// `g_real(kNode, ...)`), and exported as
//   name                        the default node (exports.map): unversioned references
//   name@libcudart.so.11.0 ...  one hidden (non-default) version per CUDA major
// Each exported entry is a two-instruction thunk that tail-jumps to its instantiation through a
// constant pointer: arguments, stack and return address stay the caller's, whatever the
// signature.
#pragma once

// Version node names, which NVIDIA makes equal to the sonames. Node n of family F is PT_NODEn_F.
#define PT_NODE1_CUDART "libcudart.so.11.0"
#define PT_NODE2_CUDART "libcudart.so.12"
#define PT_NODE3_CUDART "libcudart.so.13"
#define PT_NODE1_CUBLAS "libcublas.so.11"
#define PT_NODE2_CUBLAS "libcublas.so.12"
#define PT_NODE3_CUBLAS "libcublas.so.13"
#define PT_NODE1_CUBLASLT "libcublasLt.so.11"
#define PT_NODE2_CUBLASLT "libcublasLt.so.12"
#define PT_NODE3_CUBLASLT "libcublasLt.so.13"

// glibc's base symbol version on this architecture (dlopen and dlsym before GLIBC_2.34).
#if defined(__x86_64__)
#define PERFTRACKER_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define PERFTRACKER_GLIBC_BASE "GLIBC_2.17"
#endif

#if defined(__x86_64__)
#define PT_THUNK(sym, target)                                         \
  ".text\n.globl " sym "\n.type " sym ", @function\n.p2align 4\n" sym \
  ":\n.cfi_startproc\nendbr64\njmp *" target "(%rip)\n.cfi_endproc\n.size " sym ", .-" sym "\n"
#elif defined(__aarch64__)
// x16 is the intra-procedure-call scratch register; `hint 34` is BTI c (a no-op without BTI).
#define PT_THUNK(sym, target)                                                      \
  ".text\n.globl " sym "\n.type " sym ", %function\n.p2align 4\n" sym              \
  ":\n.cfi_startproc\nhint 34\nadrp x16, " target "\nldr x16, [x16, :lo12:" target \
  "]\nbr x16\n.cfi_endproc\n.size " sym ", .-" sym "\n"
#else
#error "versioned hook entries are implemented for x86-64 and aarch64"
#endif

#define PT_ENTRY_TARGET(name, n)                                                           \
  extern "C" [[gnu::visibility("hidden"),                                                  \
               gnu::used]] constinit decltype(&::perftracker::preload::versioned::name<n>) \
      const perftracker_target_##name##_##n = &::perftracker::preload::versioned::name<n>;

#define PT_VERSIONED_THUNK(family, name, n)                                  \
  PT_THUNK("perftracker_v" #n "_" #name, "perftracker_target_" #name "_" #n) \
  ".symver perftracker_v" #n "_" #name ", " #name "@" PT_NODE##n##_##family "\n"

// At global scope, after the template perftracker::preload::versioned::name<int kNode>.
#define PERFTRACKER_VERSIONED_HOOK(family, name)                                                \
  PT_ENTRY_TARGET(name, 0)                                                                      \
  PT_ENTRY_TARGET(name, 1)                                                                      \
  PT_ENTRY_TARGET(name, 2)                                                                      \
  PT_ENTRY_TARGET(name, 3)                                                                      \
  __asm__(PT_THUNK(#name, "perftracker_target_" #name "_0") PT_VERSIONED_THUNK(family, name, 1) \
              PT_VERSIONED_THUNK(family, name, 2) PT_VERSIONED_THUNK(family, name, 3));
