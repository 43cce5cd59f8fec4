// The selftest workload's one kernel, as PTX text: no nvcc at build time, so the workload loads
// it at run time with cudaLibraryLoadData (CUDA 12+; the driver JIT-compiles it for the GPU) and
// launches it with cudaLaunchKernel -- the runtime path PyTorch's kernels take.
//
//   selftest_saxpy(u32 n, f32 a, f32* x, f32* y): y[i] = fma(a, x[i], y[i]) for i < n,
//   one element per thread.
//
// simgpu recognizes the entry name and runs the same body (test/simgpu/cudart/
// runtime_library.cpp). `@TARGET@` becomes the target: sm_50 below compute capability 7.5,
// sm_75 from there (CUDA 13 no longer compiles for targets below it).
#pragma once

namespace perftracker::selftest {

inline constexpr const char* kSaxpyEntry = "selftest_saxpy";

inline constexpr const char* kSaxpyPtx = R"(.version 7.0
.target @TARGET@
.address_size 64

.visible .entry selftest_saxpy(
    .param .u32 p_n,
    .param .f32 p_a,
    .param .u64 p_x,
    .param .u64 p_y)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;

    ld.param.u32 %r1, [p_n];
    ld.param.f32 %f1, [p_a];
    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
)";

}  // namespace perftracker::selftest
