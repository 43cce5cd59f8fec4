#include "tools/synthetic/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "tools/synthetic/collectives.h"
#include "tools/synthetic/noise.h"
#include "tools/synthetic/physics.h"

namespace perftracker::synthetic {
namespace {

using format::FunctionKind;

constexpr std::array kModules = {"torch/nn/modules/module.py",
                                 "torch/nn/modules/linear.py",
                                 "torch/nn/modules/activation.py",
                                 "torch/nn/modules/normalization.py",
                                 "torch/nn/modules/dropout.py",
                                 "torch/nn/functional.py",
                                 "torch/utils/data/dataloader.py",
                                 "torch/optim/adamw.py",
                                 "torch/optim/optimizer.py",
                                 "torch/autograd/__init__.py",
                                 "torch/distributed/distributed_c10d.py",
                                 "torch/nn/parallel/distributed.py",
                                 "transformers/models/llama/modeling_llama.py",
                                 "train/model.py",
                                 "train/data.py",
                                 "train/loop.py"};
constexpr std::array kQualnames = {"Module._call_impl",
                                   "Linear.forward",
                                   "GELU.forward",
                                   "LayerNorm.forward",
                                   "Dropout.forward",
                                   "scaled_dot_product_attention",
                                   "_MultiProcessingDataLoaderIter.__next__",
                                   "AdamW.step",
                                   "Optimizer.zero_grad",
                                   "backward",
                                   "all_reduce",
                                   "DistributedDataParallel.forward",
                                   "LlamaAttention.forward",
                                   "LlamaMLP.forward",
                                   "Block.forward",
                                   "collate",
                                   "train_step",
                                   "apply_rotary_pos_emb"};
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
                              "cudaEventRecord",  "cudaMalloc",      "cudaStreamWaitEvent"};

// What a function is and how it behaves on a healthy rank.
struct Spec {
  FunctionKind kind;
  std::string name;
  int calls_per_iter;
  double mean_ns;
  int32_t parent = -1;
  bool comm = false;  // an NCCL kernel: its device time includes waiting for peers
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
    const auto* kernel = kKernels[rng() % kKernels.size()];
    Spec s{FunctionKind::kKernel,
           std::string(kernel) + " [grid " + std::to_string(rng() % 4096) + "]", calls(rng),
           mean(rng) * 10};
    s.comm = std::string_view(kernel).starts_with("nccl");
    return s;
  }
  const auto* api = kApis[rng() % kApis.size()];
  return {FunctionKind::kCudaApi,
          std::string(api) + " @ libtorch_cuda.so+0x" + std::to_string(0x100000 + i * 977),
          calls(rng), mean(rng) / 4};
}

// The first functions of every job are the ones the fault classes act on; they replace random
// ones so the table keeps its size (the random generator still runs, keeping the rest unchanged).
void MakeSpecial(int i, Spec* s) {
  constexpr std::array<std::pair<FunctionKind, std::string_view>, 4> kSpecial = {{
      {FunctionKind::kDataLoader, kDataLoaderName},
      {FunctionKind::kGc, kGcName},
      {FunctionKind::kSync, kSyncName},
      {FunctionKind::kMemcpy, kMemcpyName},
  }};
  if (i >= static_cast<int>(kSpecial.size())) return;
  s->kind = kSpecial[static_cast<size_t>(i)].first;
  s->name = std::string(kSpecial[static_cast<size_t>(i)].second);
  s->calls_per_iter = 1;
  s->comm = false;
}

std::vector<Spec> MakeSpecs(const JobShape& shape) {
  // Function identities depend only on the job seed: every rank runs the same code.
  std::mt19937_64 code_rng(shape.seed);
  std::vector<Spec> specs;
  specs.reserve(static_cast<size_t>(shape.functions));
  for (int i = 0; i < shape.functions; ++i) {
    Spec spec = MakeSpec(code_rng, i);
    // Python functions sit in call paths: a caller among the functions before them.
    if (spec.kind == FunctionKind::kPython && i > 16 && code_rng() % 2 == 0) {
      spec.parent = static_cast<int32_t>(code_rng() % static_cast<uint64_t>(i));
    }
    if (shape.functions > 16) MakeSpecial(i, &spec);
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Per-iteration time of one function on one rank: its share of the class budget, faults applied.
double MeanPerCall(const Spec& s, const RankTimes& t, const std::array<double, 3>& class_sum,
                   double comm_wait_ratio) {
  const double calls = s.calls_per_iter;
  const double weight = s.mean_ns * calls;
  switch (s.kind) {
    case FunctionKind::kDataLoader:
      return t.dataloader / calls;
    case FunctionKind::kGc:
      return t.gc / calls;
    case FunctionKind::kSync:
      return t.sync / calls;
    case FunctionKind::kMemcpy:
      return t.memcpy / calls;
    case FunctionKind::kPython:
      return t.python * weight / class_sum[0] / calls;
    case FunctionKind::kKernel:
      if (s.comm) return s.mean_ns * comm_wait_ratio;
      return t.compute * weight / class_sum[1] / calls;
    case FunctionKind::kCudaApi:
      return t.api * weight / class_sum[2] / calls;
    default:
      return s.mean_ns;
  }
}

std::array<double, 3> ClassSums(const std::vector<Spec>& specs) {
  std::array<double, 3> sum = {1, 1, 1};
  for (const Spec& s : specs) {
    const double w = s.mean_ns * s.calls_per_iter;
    if (s.kind == FunctionKind::kPython) sum[0] += w;
    if (s.kind == FunctionKind::kKernel && !s.comm) sum[1] += w;
    if (s.kind == FunctionKind::kCudaApi) sum[2] += w;
  }
  return sum;
}

// Counts values into histogram buckets without Histogram::Add's bookkeeping per value (a
// synthetic rank adds tens of millions): Take(min, max) leaves the histogram Add would have built.
// Two count arrays, alternating, so that runs of values in one bucket do not wait on each other's
// increment (a store-to-load chain through one address).
class BucketCounter {
 public:
  void Add(uint64_t value) {
    ++counts_[parity_][static_cast<size_t>(format::HistogramBucket(value))];
    parity_ ^= 1;
  }
  // `min` and `max`: the least and greatest value added (none when min > max).
  format::Histogram Take(uint64_t min, uint64_t max) {
    format::Histogram h;
    if (min > max) return h;
    const int lo = format::HistogramBucket(min), hi = format::HistogramBucket(max);
    h.first = lo;
    h.counts.resize(static_cast<size_t>(hi - lo + 1));
    for (int b = lo; b <= hi; ++b) {
      const auto i = static_cast<size_t>(b);
      h.counts[static_cast<size_t>(b - lo)] = counts_[0][i] + counts_[1][i];
      counts_[0][i] = counts_[1][i] = 0;
    }
    return h;
  }

 private:
  std::array<std::array<uint32_t, format::kHistogramBuckets>, 2> counts_{};
  size_t parity_ = 0;
};

format::FunctionPattern MakePattern(const JobShape& shape, const Spec& spec, double mean,
                                    FastNormal& noise) {
  format::FunctionPattern p;
  p.kind = spec.kind;
  p.name = spec.name;
  p.parent = spec.parent;
  thread_local BucketCounter duration, per_iteration;
  // Locals, not p's fields, in the loop: it runs for every call and stays in registers.
  const double spread = mean * shape.jitter;
  uint64_t min_ns = UINT64_MAX, max_ns = 0, total_ns = 0;
  uint64_t min_iter = UINT64_MAX, max_iter = 0;
  for (int it = 0; it < shape.iterations; ++it) {
    uint64_t iter_total = 0;
    for (int c = 0; c < spec.calls_per_iter; ++c) {
      const auto d =
          static_cast<uint64_t>(static_cast<int64_t>(std::max(1.0, mean + spread * noise.Next())));
      duration.Add(d);
      min_ns = std::min(min_ns, d);
      max_ns = std::max(max_ns, d);
      iter_total += d;
    }
    total_ns += iter_total;
    per_iteration.Add(iter_total);
    min_iter = std::min(min_iter, iter_total);
    max_iter = std::max(max_iter, iter_total);
  }
  p.count = static_cast<uint64_t>(shape.iterations) * static_cast<uint64_t>(spec.calls_per_iter);
  p.min_ns = p.count == 0 ? 0 : min_ns;
  p.max_ns = max_ns;
  p.total_ns = total_ns;
  p.duration = duration.Take(min_ns, max_ns);
  p.per_iteration = per_iteration.Take(min_iter, max_iter);
  p.self_ns = spec.kind == FunctionKind::kPython ? p.total_ns / 2 : p.total_ns;
  if (spec.kind == FunctionKind::kKernel || spec.kind == FunctionKind::kMemcpy) {
    p.device_samples = std::max<uint64_t>(1, p.count / 8);
    p.device_ns = p.total_ns * p.device_samples / p.count;
    p.device = p.duration;
  }
  if (spec.kind == FunctionKind::kSync) p.wait_ns = p.total_ns * 9 / 10;
  return p;
}

}  // namespace

// What every rank's windows share: the job's function table and each window's physics.
struct JobPlan::Shared {
  JobShape shape;
  int world_size = 0;
  std::vector<Spec> specs;
  std::array<double, 3> class_sum{};
  std::vector<WindowPhysics> windows;  // by window_seq, for the windows planned
};

format::Window JobPlan::MakeRankWindow(const Shared& plan, const WindowPhysics& physics, int rank) {
  const JobShape& shape = plan.shape;
  const uint64_t window_seq = physics.window_seq;
  std::mt19937_64 rng(shape.seed * 1000003 + static_cast<uint64_t>(rank) * 7919 + window_seq +
                      shape.run_seed * 0x9e3779b97f4a7c15ull);
  const RankTimes& mine = physics.all[static_cast<size_t>(rank)];

  format::Window w;
  w.window_seq = window_seq;
  w.iter_begin = window_seq * static_cast<uint64_t>(shape.iterations);
  w.iter_end = w.iter_begin + static_cast<uint64_t>(shape.iterations);
  const std::vector<double>& iteration_ns = physics.iteration_ns;
  const CollectiveResult comm = MakeCollectives(shape, physics, rank, rng);
  w.collectives = comm.patterns;

  w.functions.reserve(plan.specs.size());
  FastNormal noise(rng());
  for (const Spec& spec : plan.specs) {
    const double mean = MeanPerCall(spec, mine, plan.class_sum, comm.wait_ratio);
    w.functions.push_back(MakePattern(shape, spec, mean, noise));
  }

  std::normal_distribution<double> clock_noise(1.0, 0.002);
  w.iterations.first = w.iter_begin;
  for (int it = 0; it < shape.iterations; ++it) {
    const auto d = static_cast<uint64_t>(iteration_ns[static_cast<size_t>(it)] * clock_noise(rng));
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

JobPlan::JobPlan(const JobShape& job, int world_size, uint64_t windows) {
  auto plan = std::make_shared<Shared>();
  Shared& s = *plan;
  s.shape = Normalized(job);
  s.world_size = world_size;
  s.specs = MakeSpecs(s.shape);
  s.class_sum = ClassSums(s.specs);
  for (uint64_t w = 0; w < windows; ++w) {
    s.windows.push_back(MakeWindowPhysics(s.shape, world_size, w));
  }
  shared_ = std::move(plan);
}

JobPlan::~JobPlan() = default;

format::Window JobPlan::MakeWindow(int rank, uint64_t window_seq) const {
  const Shared& s = *shared_;
  if (window_seq >= s.windows.size()) {
    return MakeRankWindow(s, MakeWindowPhysics(s.shape, s.world_size, window_seq), rank);
  }
  return MakeRankWindow(s, s.windows[window_seq], rank);
}

format::Window MakeWindow(const JobShape& job, int rank, int world_size, uint64_t window_seq) {
  const JobPlan plan(job, world_size, 0);
  return plan.MakeWindow(rank, window_seq);
}

}  // namespace perftracker::synthetic
