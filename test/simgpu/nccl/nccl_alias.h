// Real libnccl.so.2 exports every API twice: a strong pnccl* symbol (for profilers) and a weak
// nccl* alias. Define the pnccl* function and add the weak alias with this macro.
#ifndef SIMGPU_NCCL_NCCL_ALIAS_H_
#define SIMGPU_NCCL_NCCL_ALIAS_H_

#define SIMGPU_NCCL_WEAK_ALIAS(name) \
  extern "C" decltype(p##name) name __attribute__((weak, alias("p" #name)));

#endif  // SIMGPU_NCCL_NCCL_ALIAS_H_
