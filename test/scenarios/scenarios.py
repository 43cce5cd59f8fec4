"""The fault scenarios: each a real job with one injected fault (or none) and what the analyzer's
first candidate must say about it. Fault classes follow the paper's list (research/perftracker.md
§8). Faults are sized so the verdict holds on a loaded 2-core machine; checks are on categories,
rank sets and function names, never on absolute times.
"""

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Expect:
    category: str  # regex the whole category must match
    ranks: list
    function: str = ""  # regex the first candidate's function must match
    source: str = ""  # evidence source, when the detector matters (expected_range)
    hang: str = ""  # "communication" / "non_communication"
    # > 0: a GEMM among the verdict's parts runs at most this fraction of its peers' TFLOP/s
    gemm_tflops_below: float = 0
    helpers: str = ""  # regex a busiest function of the ranks' helper processes must match
    # regex the verdict's hardware and host reasons (evidence signals' texts, one per line) must
    # match: the verdict says *why*
    why: str = ""


@dataclass
class Scenario:
    name: str
    what: str
    job: str  # "sim_train" or "torch_ddp"
    nproc: int
    args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    expect: Optional[Expect] = None  # None: no candidate above the threshold
    ci: bool = False  # part of the default (CI) subset
    nodes: int = 1  # > 1: one torchrun per node, each under its own hostname
    hang: bool = False  # watch for the hang, then SIGKILL the job
    analyze_args: list = field(default_factory=list)  # extra `perftracker analyze` options
    # Fake /sys and /proc trees, one per node (test/support/fake_host.py), whose counters advance
    # while the job runs: node -> its `fake_host.py run` rates (["nic.rx_errors@mlx5_0/1=40"]).
    # Every node gets a tree (with idle counters) as soon as one has rates.
    hosts: dict = field(default_factory=dict)
    warning: str = ""  # regex a signal warning (a deviation no verdict explains) must match
    script: str = ""  # a torch_ddp job's program (default: torch_ddp_job.py)
    preload_env: Optional[dict] = None  # the library's settings (default: jobs.PRELOAD_ENV)


# What the simulated cluster's links give (SIMGPU_NVLINK_GBPS, SIMGPU_NIC_GBPS defaults), as a
# user who knows the hardware passes it.
LINKS = ["--link-gbps", "150,25"]
# sim_train, data parallel: ~270 simulated ms per step, 40 steps = 8 windows of 5.
DP = ["--iters", "40", "--layers", "4", "--seq", "2048", "--log-every", "5"]
# A model small enough that the host's Python sets the pace: 19 ms a step on a 2-core machine,
# idle or beside two busy processes. host_steal's fault then costs the job a third of its step
# or more (19 -> 25 ms idle, -> 28 ms loaded). Under DP's model the device's queue absorbs it
# (165 -> 170 ms idle, nothing on a loaded machine), and "no rank deviates" is right there.
HOST_BOUND = ["--iters", "40", "--layers", "4", "--hidden", "1024", "--heads", "8", "--seq",
              "1024", "--log-every", "5"]
# 60 steps (12 windows of 5): long enough for a fault that begins or moves halfway.
DP60 = ["--iters", "60", "--layers", "4", "--seq", "2048", "--log-every", "5"]
DP_OPS_PER_STEP = 11  # NCCL all-reduces a DP step issues (gradient buckets): SIMGPU_* "@op" specs
HALFWAY = 30 * DP_OPS_PER_STEP
# Tensor parallel in pairs x 4 data-parallel replicas.
TP = ["--mode", "tp", "--tp-size", "2", "--iters", "40", "--layers", "4", "--seq", "2048",
      "--log-every", "5"]
# Pipeline parallel (sends between stages go over the links the link matrix checks).
PP = ["--mode", "pp", "--pp-stages", "2", "--iters", "30", "--layers", "4", "--seq", "2048",
      "--log-every", "5"]
ALL8 = list(range(8))

SCENARIOS = [
    Scenario("gpu_throttled", "one throttled GPU: kernels x1.3 on rank 3", "sim_train", 8, DP,
             {"SIMGPU_COMPUTE_SLOWDOWN": "3=1.3", "SIMGPU_NVML_THROTTLE": "3=hw_thermal"},
             Expect("gpu_compute", [3], r"kernel|gemm|flash|nccl", gemm_tflops_below=0.9,
                    why=r"rank 3: SM clock 1,523 MHz vs peers 1,980 MHz \(max 1,980 MHz\)(?s:.*)"
                        r"rank 3: throttle reasons: HW thermal slowdown"),
             ci=True),
    # The same GPU throttles only from the middle of the run: half of the windows are clean.
    Scenario("gpu_throttled_halfway", "rank 3's GPU throttles (x1.3) from step 30 of 60",
             "sim_train", 8, DP60, {"SIMGPU_COMPUTE_SLOWDOWN": f"3=1.3@{HALFWAY}"},
             Expect("gpu_compute", [3], r"kernel|gemm|flash|nccl")),
    # The straggler moves: rank 2's GPU is slow for the first half, rank 5's for the second.
    Scenario("straggler_moves", "a x1.3 straggler on rank 2 for steps 0-30, then on rank 5",
             "sim_train", 8, DP60,
             {"SIMGPU_COMPUTE_SLOWDOWN": f"2=1.3@0-{HALFWAY},5=1.3@{HALFWAY}"},
             Expect("gpu_compute", [2, 5], r"kernel|gemm|flash|nccl")),
    # TP x DP: rank 5's GPU is slow. Its tensor-parallel partner (rank 4) waits for it at every
    # layer's all-reduce, every other replica at the gradient all-reduce: rank 5 alone is named.
    Scenario("tp_slow_rank", "TP 2 x DP 4: rank 5's GPU x1.3 (its TP partner is rank 4)",
             "sim_train", 8, TP, {"SIMGPU_COMPUTE_SLOWDOWN": "5=1.3"},
             Expect("gpu_compute", [5], r"kernel|gemm|flash|nccl")),
    # Pipeline stages on different nodes: activations cross the network, where NCCL's proxy
    # (and its profiler plugin) sees every link; intra-node NVLink has no proxy events.
    Scenario("bad_link", "one bad network link between ranks 2 and 6 (2 nodes of 4): x0.3",
             "sim_train", 8, PP, {"SIMGPU_LINK_FACTOR": "2-6=0.3"},
             Expect("communication_link", [2, 6], r"link"), nodes=2, ci=True),
    # The same bad link, and the port of node 1 that carries it counts receive and symbol
    # errors (fake sysfs counters advancing while the job runs): the link verdict says why.
    Scenario("bad_link_nic_errors", "bad link 2-6 (x0.3), node 1's mlx5_0/1 port counting errors",
             "sim_train", 8, PP, {"SIMGPU_LINK_FACTOR": "2-6=0.3"},
             Expect("communication_link", [2, 6], r"link",
                    why=r"host node1 \(ranks 4-7\): receive errors [\d.]+/s vs peers 0\.00/s "
                        r"on mlx5_0/1"),
             nodes=2, hosts={1: ["nic.rx_errors@mlx5_0/1=40", "nic.link_errors@mlx5_0/1=4"]},
             ci=True),
    Scenario("bad_node_links", "every link of node 1 (ranks 4-7 of 16) x0.3", "sim_train", 16,
             PP, {"SIMGPU_LINK_FACTOR": "n1=0.3"},
             Expect("communication_link", [4, 5, 6, 7], r"node"), nodes=4),
    Scenario("pcie_degraded", "host<->device copies x4 on rank 5", "sim_train", 8,
             DP + ["--input-mb", "256"], {"SIMGPU_PCIE_SLOWDOWN": "5=4"},
             Expect("gpu_memory", [5], r"memcpy|copy|Memcpy",
                    why=r"rank 5: PCIe width x4 vs peers x16 \(max x16\)")),
    Scenario("slow_loader", "slow data loader on rank 3 (+15 ms a batch)", "sim_train", 8, DP,
             {"SIM_TRAIN_SLOW_LOADER": "3=15"},
             Expect("dataloader", [3], r"DataLoader|slow_loader|data"), ci=True),
    # A loader every rank shares is claimed where it costs 6% of the step or more
    # (Thresholds::whole_group_material): +15 ms a batch hid in the device's queue (2%), so the
    # fault is sized to show through it.
    Scenario("slow_loader_all", "slow data loader on every rank (+60 ms a batch)", "sim_train",
             8, DP, {"SIM_TRAIN_SLOW_LOADER": "*=60"},
             Expect("dataloader", ALL8, r"DataLoader|slow_loader|data",
                    source="expected_range")),
    # A sync waits for the device; it costs only the idle device it leaves while the host
    # prepares the next work. Here the host has none to speak of: the job ran 83.9 ms a step
    # against clean_8's 82.5 (1.7%), so no claim, though every rank waits 98% of the step in it.
    Scenario("host_sync_all", "a loss.item() host sync every step on every rank, hidden",
             "sim_train", 8, DP, {"SIM_TRAIN_HOST_SYNC_EVERY_STEP": "1"}, ci=True),
    # Host-bound on every rank: ranks agree, so only the expected range of the critical path
    # (beta of a Python function <= 1%) can see it; the GPU idles while the routine runs.
    Scenario("py_routine_all", "a 60 ms pure-Python routine after every step on every rank",
             "sim_train", 8, DP, {"SIM_TRAIN_PY_ROUTINE": "*=60"},
             Expect("software_all_ranks", ALL8, r"Faults\.bookkeeping", source="expected_range")),
    Scenario("gc_pauses", "GC pauses on rank 2", "sim_train", 8, DP,
             {"SIM_TRAIN_GC_PRESSURE": "2=50"}, Expect("gc", [2], r"gc|collect")),
    # Two busy Python threads inside rank 1 (contention from outside the process would slow
    # every rank of this 2-core machine alike): a slower host on rank 1 (host_cpu, a kind sum),
    # or, as precisely, the spinning threads' own Python function on rank 1 and nowhere else.
    Scenario("cpu_contention", "CPU contention on rank 1 (2 busy threads)", "sim_train", 8, DP,
             {"SIM_TRAIN_CPU_CONTENTION": "1=2"},
             Expect("host_cpu|python", [1], r"^all |is_set|_spin|faults\.py"), ci=True),
    # One host of four is oversubscribed from outside the job (CPU steal, its cgroup's quota):
    # its rank's host code is slower (2 busy threads stand in for the stolen CPU) and the host's
    # counters say why.
    Scenario("host_steal", "rank 2's host: CPU steal 30% and cgroup throttling (4 hosts of 1)",
             "sim_train", 4, HOST_BOUND, {"SIM_TRAIN_CPU_CONTENTION": "2=2"},
             Expect("host_cpu|python", [2], r"^all |is_set|_spin|faults\.py",
                    why=r"(?s)(?=.*host node2 \(rank 2\): CPU steal [\d.]+ % vs peers [\d.]+ %)"
                        r"(?=.*host node2 \(rank 2\): cgroup CPU-throttled periods)"),
             nodes=4, hosts={2: ["host.cpu_steal_pct=30", "host.cgroup_throttled_periods=8",
                                 "host.cgroup_throttled_ns=150000000"]}, ci=True),
    Scenario("hang_missing_rank", "rank 5 stops before NCCL op 40, job SIGKILLed", "sim_train",
             8, ["--iters", "1000", "--log-every", "1000"], {"SIMGPU_HANG": "5:40"},
             Expect("hang", [5], r"all_reduce", hang="non_communication"), hang=True),
    Scenario("hang_communication", "NCCL op 40 stalls for good (every rank arrived)",
             "sim_train", 8, ["--iters", "1000", "--log-every", "1000"],
             {"SIMGPU_STALL": "2:40"},
             Expect("hang", ALL8, r"all_reduce", hang="communication"), hang=True),
    Scenario("pipeline_clean", "pipeline parallel, 2 unequal stages on 2 nodes, no fault",
             "sim_train", 8, PP, {}, None, nodes=2, ci=True),
    # Out of the CI subset while the data loader's expected range (<= 1% of the step) can read
    # a loaded 2-core host as a problem: DataLoader.__next__ takes 1-3% of this small step there
    # (one run in eight scored 0.011), though the host waits ~75 ms a step for the device anyway.
    # The host_cpu verdict on "all CUDA API calls" that once scored 0.011 has a noise floor now.
    Scenario("clean_8", "clean, 8 ranks, 3% jitter (links judged against their peak)",
             "sim_train", 8, DP, {}, None, analyze_args=LINKS),
    # The fabric is misconfigured on every rank (as with P2P disabled, traffic through host
    # memory): NVLink runs at a fifth of its peak. Every rank agrees, so only the collectives'
    # expected range (bus bandwidth >= half the link's peak) can see it.
    Scenario("fabric_misconfigured", "NVLink at 30 of its 150 GB/s on every rank",
             "sim_train", 8, DP, {"SIMGPU_NVLINK_GBPS": "30"},
             Expect("communication_fabric", ALL8, r"AllReduce.*bus bandwidth",
                    source="bus_bandwidth"), analyze_args=LINKS),
    # Legitimately unequal roles: rank 0 spends 1.5 ms more Python a step (its logging) while
    # its device still has the step's work queued. Rank 0's host deviates, but none of it
    # reaches its critical path: the job is no slower, so nothing is a candidate. (With 3 ms,
    # 8 ranks on this machine's 2 CPUs: 1 run in 3 had rank 0 descheduled more than its peers in
    # most windows, its device idle meanwhile and its peers waiting 3 ms a step for it at the
    # collectives, 3.7% of the step: its host's CPUs, truly, and no role's cost.)
    Scenario("roles_clean", "clean, rank 0 logs more (1.5 ms of Python a step, hidden behind "
             "the device)", "sim_train", 8, DP, {"SIM_TRAIN_PY_ROUTINE": "0=1.5"}, None),
    # Clean, but rank 3's GPU runs 33 °C warmer than its peers and keeps pace: a warning for
    # the operator, never a candidate.
    Scenario("clean_warm_gpu", "clean, rank 3's GPU at 88 °C (peers 55 °C), not slower",
             "sim_train", 8, DP, {"SIMGPU_NVML_TEMP": "3=88"}, None,
             warning=r"rank 3: temperature 88 °C vs peers 55 °C", ci=True),
    Scenario("clean_16", "clean, 16 ranks on 2 nodes of 8 GPUs, 3% jitter", "sim_train", 16, DP,
             {}, None, nodes=2),
    Scenario("torch_slow_loader", "real torch DDP (CPU, gloo): slow data loader on rank 2",
             "torch_ddp", 4, ["--slow-loader-rank", "2", "--slow-loader-ms", "60"], {},
             Expect("dataloader", [2], r"collate|DataLoader|dataloader"), ci=True),
    # The loading runs in spawned workers (helper processes with files of their own): the rank
    # waits for them, and the verdict names what its workers spent the time on.
    Scenario("torch_slow_loader_workers",
             "real torch DDP (CPU, gloo): slow data loader in rank 2's 2 spawned workers",
             "torch_ddp", 4, ["--slow-loader-rank", "2", "--slow-loader-ms", "150",
                              "--loader-workers", "2", "--steps", "120"], {},
             # The rank waits deep in a selector, in the loader's __next__ (the evidence's
             # waits_in); its workers' slow collation is the verdict.
             Expect("dataloader", [2], r"SlowCollate\.__call__", helpers=r"SlowCollate\.__call__")),
    # The same with workers started by fork, Linux's default: they record from the interpreter's
    # after-fork hook and flush at the os._exit they end with.
    Scenario("torch_slow_loader_fork_workers",
             "real torch DDP (CPU, gloo): slow data loader in rank 2's 2 forked workers",
             "torch_ddp", 4, ["--slow-loader-rank", "2", "--slow-loader-ms", "150",
                              "--loader-workers", "2", "--loader-start", "fork", "--steps", "120"],
             {},
             Expect("dataloader", [2], r"SlowCollate\.__call__", helpers=r"SlowCollate\.__call__")),
    # CPU training: the framework's own frames are the device; a user routine of ~10% of the
    # step on every rank is host overhead above the expected range.
    Scenario("torch_routine_all", "real torch DDP (CPU, gloo): a slow per-step routine on every rank",
             "torch_ddp", 4, ["--routine-ms", "3"], {},
             Expect("software_all_ranks", [0, 1, 2, 3], r"summarize_step",
                    source="expected_range")),
    # Rank 0 saves a checkpoint through torch.save every 10 steps from the job's own function:
    # the time is spread over torch's serialization frames (pickling, zip records, writes), and
    # the verdict names the user's function that explains it, with its total cost.
    Scenario("torch_checkpoint_rank0",
             "real torch DDP (CPU, gloo): rank 0 saves a 64 MiB checkpoint every 10 steps",
             "torch_ddp", 4, ["--steps", "60", "--checkpoint-every", "10",
                              "--checkpoint-mb", "64"], {},
             Expect("python|software.*|checkpoint.*", [0], r"save_checkpoint$")),
    # A thread of rank 1 holds the GIL in long builtin calls (a metrics exporter): the training
    # loop waits for the interpreter, every peer waits for rank 1 inside backward. The thread's
    # function is the verdict (its body never returns, like the loop's, but never ran on the
    # loop's thread), charged what the peers waited, not the thread's time (more than a step).
    Scenario("torch_busy_thread_rank1",
             "real torch DDP (CPU, gloo): a Python thread on rank 1 holds the GIL",
             "torch_ddp", 4, ["--busy-thread-ranks", "1"], {},
             Expect("host_cpu|python", [1], r"^all |encode_metrics"), ci=True),
    # Rank 3 does 4x its peers' work (a larger batch): a difference in what it does is evidence
    # against it, named at the model's forward.
    Scenario("torch_big_batch_rank3",
             "real torch DDP (CPU, gloo): rank 3 trains on 4x its peers' batch",
             "torch_ddp", 4, ["--batch-rank", "3", "--batch-scale", "4"], {},
             Expect("python", [3], r"forward|_call_impl")),
    Scenario("torch_clean", "real torch DDP (CPU, gloo): clean", "torch_ddp", 4, [], {}, None,
             ci=True),
    # More ranks than cores: every rank is descheduled now and then, a different one each time.
    Scenario("torch_oversubscribed_clean",
             "real torch DDP (CPU, gloo): clean, 8 ranks on a 2-core host", "torch_ddp", 8, [],
             {}, None),
]
