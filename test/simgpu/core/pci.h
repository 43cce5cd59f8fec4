// Where the simulated devices sit on the PCI bus. The CUDA runtime (cudaDeviceGetPCIBusId,
// cudaDevAttrPci*) and NVML (nvmlDeviceGetHandleByPciBusId_v2) both answer from here, so a bus id
// taken from one finds the same device in the other, as on a real node.
#ifndef SIMGPU_CORE_PCI_H_
#define SIMGPU_CORE_PCI_H_

namespace simgpu {

// Device ordinal i is 0000:(0x18 + i):00.0 on every node; an H100 board's first GPU bus.
inline constexpr int kPciDomain = 0;
inline constexpr int kFirstPciBus = 0x18;
inline constexpr int kPciDevice = 0;
inline constexpr int kPciFunction = 0;

inline int PciBusOf(int ordinal) { return kFirstPciBus + ordinal; }

// The ordinal on `bus`, or -1 when no simulated device can sit there.
inline int OrdinalOfPciBus(int bus) { return bus >= kFirstPciBus ? bus - kFirstPciBus : -1; }

}  // namespace simgpu

#endif  // SIMGPU_CORE_PCI_H_
