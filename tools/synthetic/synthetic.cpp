#include "tools/synthetic/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

namespace perftracker::synthetic {
namespace {

using format::CollectiveOp;
using format::FunctionKind;

constexpr std::array kModules = {
    "torch/nn/modules/module.py",        "torch/nn/modules/linear.py",
    "torch/nn/modules/activation.py",    "torch/nn/modules/normalization.py",
    "torch/nn/modules/dropout.py",       "torch/nn/functional.py",
    "torch/utils/data/dataloader.py",    "torch/optim/adamw.py",
    "torch/optim/optimizer.py",          "torch/autograd/__init__.py",
    "torch/distributed/distributed_c10d.py", "torch/nn/parallel/distributed.py",
    "transformers/models/llama/modeling_llama.py", "train/model.py",
    "train/data.py",                     "train/loop.py"};
constexpr std::array kQualnames = {
    "Module._call_impl", "Linear.forward",   "GELU.forward",       "LayerNorm.forward",
    "Dropout.forward",   "scaled_dot_product_attention",           "_MultiProcessingDataLoaderIter.__next__",
    "AdamW.step",        "Optimizer.zero_grad", "backward",          "all_reduce",
    "DistributedDataParallel.forward", "LlamaAttention.forward",   "LlamaMLP.forward",
    "Block.forward",     "collate",          "train_step",         "apply_rotary_pos_emb"};
constexpr std::array kKernels = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*)",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>"
    ", false, true, false, false, true, true, false>(Flash_fwd_params)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
    "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >"};
constexpr std::array kApis = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize",
                              "cudaEventRecord", "cudaMalloc", "cudaStreamWaitEvent"};

struct Spec {
  FunctionKind kind;
  std::string name;
  int calls_per_iter;
  double mean_ns;
};

// Calls per iteration are heavy-tailed, as with call-path identities: most paths run once per
// step, some once per layer, a few (elementwise kernels, small launches) many times.
int CallsPerIteration(std::mt19937_64& rng) {
  const int roll = static_cast<int>(rng() % 100);
  if (roll < 60) return 1;
  if (roll < 85) return 2 + static_cast<int>(rng() % 7);
  return 16 + static_cast<int>(rng() % 49);
}

Spec MakeSpec(std::mt19937_64& rng, int i) {
  const int bucket = i % 20;
  auto calls = [](std::mt19937_64& r) { return CallsPerIteration(r); };
  std::lognormal_distribution<double> mean(9.0, 1.5);
  if (bucket < 13) {  // 65% Python functions, named like file:line:qualname
    const auto* mod = kModules[rng() % kModules.size()];
    const auto* qual = kQualnames[rng() % kQualnames.size()];
    return {FunctionKind::kPython,
            std::string(mod) + ":" + std::to_string(20 + i % 900) + ":" + qual + "#" +
                std::to_string(i),
            calls(rng), mean(rng) * 3};
  }
  if (bucket < 17) {  // kernels, with template-heavy names
    return {FunctionKind::kKernel,
            std::string(kKernels[rng() % kKernels.size()]) + " [grid " +
                std::to_string(rng() % 4096) + "]",
            calls(rng), mean(rng) * 10};
  }
  const auto* api = kApis[rng() % kApis.size()];
  return {FunctionKind::kCudaApi,
          std::string(api) + " @ libtorch_cuda.so+0x" + std::to_string(0x100000 + i * 977), calls(rng),
          mean(rng) / 4};
}

double Noise(std::mt19937_64& rng) { return std::normal_distribution<double>(1.0, 0.03)(rng); }

}  // namespace

format::Window MakeWindow(const JobShape& shape, int rank, int world_size, uint64_t window_seq) {
  // Function identities depend only on the job seed: every rank runs the same code.
  std::mt19937_64 code_rng(shape.seed);
  std::mt19937_64 rng(shape.seed * 1000003 + static_cast<uint64_t>(rank) * 7919 + window_seq);
  const bool slow = rank == shape.slow_rank;
  const double compute = slow ? shape.slow_factor : 1.0;

  format::Window w;
  w.window_seq = window_seq;
  w.iter_begin = window_seq * static_cast<uint64_t>(shape.iterations);
  w.iter_end = w.iter_begin + static_cast<uint64_t>(shape.iterations);
  w.functions.reserve(static_cast<size_t>(shape.functions));
  for (int i = 0; i < shape.functions; ++i) {
    const Spec spec = MakeSpec(code_rng, i);
    format::FunctionPattern p;
    p.kind = spec.kind;
    p.name = spec.name;
    // Python functions sit in call paths: a caller among the functions before them.
    if (spec.kind == FunctionKind::kPython && i > 16 && code_rng() % 2 == 0) {
      p.parent = static_cast<int32_t>(code_rng() % static_cast<uint64_t>(i));
    }
    const double scale = spec.kind == FunctionKind::kKernel ? compute : 1.0;
    for (int it = 0; it < shape.iterations; ++it) {
      uint64_t iter_total = 0;
      for (int c = 0; c < spec.calls_per_iter; ++c) {
        const auto d = static_cast<uint64_t>(std::max(1.0, spec.mean_ns * scale * Noise(rng)));
        p.duration.Add(d);
        p.min_ns = p.count == 0 ? d : std::min(p.min_ns, d);
        p.max_ns = std::max(p.max_ns, d);
        p.total_ns += d;
        ++p.count;
        iter_total += d;
      }
      p.per_iteration.Add(iter_total);
    }
    p.self_ns = spec.kind == FunctionKind::kPython ? p.total_ns / 2 : p.total_ns;
    if (spec.kind == FunctionKind::kKernel) {
      p.device_samples = p.count / 8;
      p.device_ns = p.total_ns / 8;
      p.device = p.duration;
    }
    w.functions.push_back(std::move(p));
  }

  const uint64_t dp_comm = 0x5eed0000 + shape.seed;
  for (int i = 0; i < shape.collectives; ++i) {
    format::CollectivePattern c;
    c.comm_id = dp_comm + static_cast<uint64_t>(i % 3);
    c.comm_size = static_cast<uint32_t>(world_size);
    c.comm_rank = static_cast<uint32_t>(rank);
    c.op = i % 3 == 0 ? CollectiveOp::kAllReduce
                      : (i % 3 == 1 ? CollectiveOp::kAllGather : CollectiveOp::kReduceScatter);
    c.name = std::string("nccl") + (i % 3 == 0 ? "AllReduce" : i % 3 == 1 ? "AllGather" : "ReduceScatter");
    c.bytes = uint64_t{1} << (16 + i % 10);
    const double base = 20'000.0 + static_cast<double>(c.bytes) / 50.0;
    // Peers of a slow rank arrive early and wait; the slow rank arrives last and waits least.
    const double wait = shape.slow_rank >= 0 && !slow ? base * (shape.slow_factor - 1.0) * 4 : 0;
    const double offset = (0.3 + 0.6 * i / std::max(1, shape.collectives)) *
                          static_cast<double>(shape.iteration_ns) * (slow ? compute : 1.0);
    for (int it = 0; it < shape.iterations; ++it) {
      const auto d = static_cast<uint64_t>((base + wait) * Noise(rng));
      c.device.Add(d);
      c.launch_offset.Add(static_cast<uint64_t>(offset * Noise(rng)));
      c.device_ns += d;
      ++c.device_samples;
      ++c.count;
      c.host_ns += 3000;
    }
    c.first_seq = window_seq * static_cast<uint64_t>(shape.iterations);
    c.last_seq_launched = c.first_seq + static_cast<uint64_t>(shape.iterations) - 1;
    c.last_seq_completed = c.last_seq_launched;
    w.collectives.push_back(std::move(c));
  }

  w.iterations.first = w.iter_begin;
  for (int it = 0; it < shape.iterations; ++it) {
    const auto d = static_cast<uint64_t>(static_cast<double>(shape.iteration_ns) *
                                         (shape.slow_rank >= 0 ? shape.slow_factor : 1.0) * Noise(rng));
    w.iterations.duration.Add(d);
    w.iterations.min_ns = it == 0 ? d : std::min(w.iterations.min_ns, d);
    w.iterations.max_ns = std::max(w.iterations.max_ns, d);
    w.iterations.total_ns += d;
    ++w.iterations.count;
  }
  w.start_mono_ns = 1'000'000'000ull + window_seq * w.iterations.total_ns;
  w.end_mono_ns = w.start_mono_ns + w.iterations.total_ns;
  w.start_real_ns = 1'790'000'000'000'000'000ull + w.start_mono_ns;
  format::FillFunctionIds(&w.functions);
  w.health.hook_calls = 1'000'000;
  w.health.hook_ns = 25'000'000;
  return w;
}

}  // namespace perftracker::synthetic
