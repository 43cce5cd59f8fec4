// A rank for the hardware-signal tests, on simgpu: `cpu` touches neither CUDA nor NCCL, `gpu`
// makes device 1 current and allocates, `nccl` also creates a one-rank communicator. Then it
// idles for MS milliseconds while the writer samples. Its stderr (the library's warnings,
// written by the writer thread after main starts) goes to STDERR_FILE.
//   pt_signals_workload cpu|gpu|nccl MS STDERR_FILE
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string mode = argv[1];
  const int ms = std::atoi(argv[2]);
  const int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || dup2(fd, 2) < 0) return 2;
  ncclComm_t comm = nullptr;
  if (mode == "gpu" || mode == "nccl") {
    void* p = nullptr;
    if (cudaSetDevice(1) != cudaSuccess || cudaMalloc(&p, 1 << 20) != cudaSuccess) return 3;
    cudaFree(p);
  }
  if (mode == "nccl") {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
      return 4;
    }
  }
  for (int waited = 0; waited < ms; waited += 10) usleep(10'000);
  if (comm != nullptr) ncclCommDestroy(comm);
  return 0;
}
