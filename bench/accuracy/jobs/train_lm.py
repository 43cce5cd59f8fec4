"""A small language model trained with real PyTorch DDP on CPU (gloo), launched by torchrun: the
diagnosis benchmark's CPU shapes (bench/accuracy/README.md).

Everything a user writes is here, in user code: the model (RMSNorm, attention, MLP, blocks), a
dataset that reads token shards from files and decodes them, the loop.

  --loop simple   zero_grad, forward, cross-entropy, backward, step
  --loop lm       gradient accumulation (`no_sync` on all but the last micro-batch), clipping,
                  a warm-up + cosine LR schedule, progress logged on rank 0 only, evaluation on
                  every rank every --eval-every steps (held-out batches, an all-reduce of the loss)
  --workers N     loader workers (--start fork|spawn) run the dataset; 0: the rank itself

One fault (--fault KIND --fault-ranks R[,R]|all --fault-size X), placed where such a fault lives
in a real job, each in a function of its own so the truth names it:
  slow_reads      read_shard waits X ms more per batch (slow storage)
  slow_decode     decode does X ms more CPU work per batch (slow loader workers)
  imbalance       the ranks' sequences are X times as long (data imbalance)
  gil_thread      a thread (encode_metrics) holds the GIL a fraction X of the time
  cpu_contention  a thread (sidecar) runs native work outside the GIL a fraction X of the time
  checkpoint      save_checkpoint writes X MiB every --fault-every steps
  gc_pauses       make_garbage: a long-lived heap of X thousand objects and cycles every step
  logging         log_metrics writes X JSON lines per step
  slow_backward   SlowGrad.backward does X ms more work (a backward-only straggler)

--step-times PREFIX: each rank writes when its steps ended to PREFIX.rank<R>.json.
"""

import argparse
import gc
import json
import math
import os
import shutil
import tempfile
import threading
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--loop", choices=("simple", "lm"), default="simple")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--accum", type=int, default=2, help="micro-batches a step (--loop lm)")
    p.add_argument("--eval-every", type=int, default=50, help="(--loop lm)")
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--start", default="fork", choices=("fork", "spawn"))
    p.add_argument("--decode-ms", type=float, default=0,
                   help="CPU work a batch's decoding takes on every rank, in ms")
    p.add_argument("--fault", default="")
    p.add_argument("--fault-ranks", default="")
    p.add_argument("--fault-size", type=float, default=0)
    p.add_argument("--fault-every", type=int, default=25)
    p.add_argument("--fault-from", type=int, default=0,
                   help="a thread fault (gil_thread, cpu_contention) starts at this step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-times", default="")
    return p.parse_args()


def faulty(args, rank):
    return args.fault_ranks == "all" or str(rank) in args.fault_ranks.split(",")


def busy(seconds):
    """CPU work that holds the GIL only between bytecodes, as Python-level decoding does."""
    end = time.perf_counter() + seconds
    tally = 0
    while time.perf_counter() < end:
        tally += sum(i * i for i in range(64))
    return tally


class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.out = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class MLP(torch.nn.Module):
    # Its time x this on every rank (--fault fn_slow): a regression of one function, which
    # `perftracker diff` must find against a clean run and no rank's peers can show.
    slowdown = 1.0

    def __init__(self, dim):
        super().__init__()
        self.up = torch.nn.Linear(dim, 4 * dim, bias=False)
        self.down = torch.nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x):
        t0 = time.perf_counter()
        y = self.down(F.gelu(self.up(x)))
        if MLP.slowdown > 1:
            # In this frame's own time, as a slower line of the function's would be.
            end = time.perf_counter() + (time.perf_counter() - t0) * (MLP.slowdown - 1)
            while time.perf_counter() < end:
                pass
        return y


class SlowGrad(torch.autograd.Function):
    """Identity forward; a backward that takes `delay_s` more (a rank whose backward alone is
    slower: under DDP every rank's backward then looks as long, all waiting in its all-reduce)."""

    @staticmethod
    def forward(ctx, x, delay_s):
        ctx.delay_s = delay_s
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        if ctx.delay_s:
            busy(ctx.delay_s)
        return grad, None


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.attn = RMSNorm(dim), Attention(dim, heads)
        self.norm2, self.mlp = RMSNorm(dim), MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLM(torch.nn.Module):
    def __init__(self, args, backward_delay_s):
        super().__init__()
        self.embed = torch.nn.Embedding(args.vocab, args.dim)
        self.blocks = torch.nn.ModuleList(Block(args.dim, args.heads) for _ in range(args.layers))
        self.norm = RMSNorm(args.dim)
        self.head = torch.nn.Linear(args.dim, args.vocab, bias=False)
        self.backward_delay_s = backward_delay_s

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.backward_delay_s:
            x = SlowGrad.apply(x, self.backward_delay_s)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def write_shards(directory, args, seq):
    """Token shards on disk, one file per shard, as a pre-tokenized corpus is stored."""
    g = torch.Generator().manual_seed(args.seed)
    paths = []
    for i in range(4):
        path = os.path.join(directory, f"shard-{i}.bin")
        torch.randint(0, args.vocab, (256 * (seq + 1),), generator=g, dtype=torch.int16) \
            .numpy().tofile(path)
        paths.append(path)
    return paths


class ShardDataset(Dataset):
    """One sample = seq+1 tokens read from a shard file and decoded; a module-level class so
    spawned workers can unpickle it."""

    def __init__(self, paths, seq, batch, read_delay_s, decode_s):
        self.paths, self.seq, self.batch = paths, seq, batch
        self.read_delay_s, self.decode_s = read_delay_s, decode_s

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        raw = read_shard(self.paths[i % len(self.paths)], (i // len(self.paths)) % 256,
                         self.seq + 1, self.read_delay_s / self.batch)
        return decode(raw, self.decode_s / self.batch)


def read_shard(path, index, length, delay_s):
    with open(path, "rb") as f:
        f.seek(index * length * 2)
        raw = f.read(length * 2)
    if delay_s:
        time.sleep(delay_s)  # storage that answers late
    return raw


def decode(raw, cpu_s):
    if cpu_s:
        busy(cpu_s)  # tokenization, augmentation: Python CPU work
    tokens = torch.frombuffer(bytearray(raw), dtype=torch.int16).long()
    return tokens[:-1], tokens[1:]


def encode_metrics(stop, duty):
    """A metrics exporter's thread serializing large records: each long builtin call holds the
    GIL throughout; it sleeps between records so that it holds it a fraction `duty` of the time."""
    while not stop.is_set():
        t = time.perf_counter()
        sum(range(200_000))
        held = time.perf_counter() - t
        time.sleep(held * (1 - duty) / duty)


def sidecar(stop, duty):
    """A native side task (compression, a second model) that releases the GIL but takes a core
    a fraction `duty` of the time."""
    a = torch.randn(192, 192)
    while not stop.is_set():
        t = time.perf_counter()
        for _ in range(20):
            a = torch.tanh(a @ a)
        held = time.perf_counter() - t
        time.sleep(held * (1 - duty) / duty)


def save_checkpoint(model, opt, step, directory, payload):
    state = {"step": step, "model": model.module.state_dict(), "optimizer": opt.state_dict(),
             "moments": payload}
    path = os.path.join(directory, "last.pt")
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def make_garbage(heap, cycles):
    """Reference cycles only the cyclic collector frees, beside a long-lived heap each full
    collection traverses."""
    for _ in range(cycles):
        a = []
        a.append(a)
    return heap


def log_metrics(sink, step, loss, lines):
    for i in range(lines):
        sink.write(json.dumps({"step": step, "i": i, "loss": loss, "lr": 1e-3,
                               "tags": ["train", "rank"], "hist": [i, i + 1, i + 2]}) + "\n")


def log_progress(step, loss, lr):
    if step % 10 == 0:
        print(f"train_lm: step {step} loss {loss:.3f} lr {lr:.2e}", flush=True)


def evaluate(model, batches):
    model.eval()
    total = torch.zeros(1)
    with torch.no_grad():
        for x, y in batches:
            total += F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    dist.all_reduce(total)
    model.train()
    return total.item()


def lr_at(step, steps):
    warmup = max(1, steps // 10)
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


class Faults:
    def __init__(self, args, rank, workdir):
        on = faulty(args, rank)
        kind, size = (args.fault, args.fault_size) if on else ("", 0.0)
        self.read_s = size / 1000 if kind == "slow_reads" else 0.0
        self.decode_s = size / 1000 if kind == "slow_decode" else 0.0
        self.seq_scale = size if kind == "imbalance" else 1.0
        self.backward_s = size / 1000 if kind == "slow_backward" else 0.0
        self.log_lines = int(size) if kind == "logging" else 0
        self.checkpoint_mb = int(size) if kind == "checkpoint" else 0
        MLP.slowdown = size if kind == "fn_slow" else 1.0
        self.every = args.fault_every
        self.heap = [{"i": i, "pad": [i]} for i in range(int(size * 1000))] \
            if kind == "gc_pauses" else None
        self.stop = threading.Event()
        self.thread = None
        if kind == "gil_thread":
            self.thread = threading.Thread(target=encode_metrics, args=(self.stop, size),
                                           daemon=True, name="metrics")
        elif kind == "cpu_contention":
            self.thread = threading.Thread(target=sidecar, args=(self.stop, size), daemon=True,
                                           name="sidecar")
        self.sink = open(os.path.join(workdir, f"metrics-{rank}.jsonl"), "w") \
            if self.log_lines else None
        self.payload = torch.randn(self.checkpoint_mb << 18) if self.checkpoint_mb else None

    def after_step(self, model, opt, step, workdir, loss):
        if self.heap is not None:
            make_garbage(self.heap, 2000)
        if self.sink:
            log_metrics(self.sink, step, loss, self.log_lines)
        if self.payload is not None and step % self.every == 0:
            save_checkpoint(model, opt, step, workdir, self.payload)


def write_step_times(prefix, rank, start, start_unix, ends):
    if prefix:
        with open(f"{prefix}.rank{rank}.json", "w") as f:
            json.dump({"rank": rank, "start_unix": start_unix,
                       "ends_s": [round(t - start, 6) for t in ends]}, f)


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    workdir = tempfile.mkdtemp(prefix="train_lm.")
    faults = Faults(args, rank, workdir)
    seq = int(round(args.seq * faults.seq_scale))
    data = ShardDataset(write_shards(workdir, args, seq), seq, args.batch, faults.read_s,
                        args.decode_ms / 1000 + faults.decode_s)
    loader = iter(DataLoader(data, batch_size=args.batch, num_workers=args.workers,
                             multiprocessing_context=args.start if args.workers else None))
    model = DistributedDataParallel(TinyLM(args, faults.backward_s))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, args.steps))
    held_out = [next(loader) for _ in range(args.eval_batches)] if args.loop == "lm" else []
    dist.barrier()
    start, start_unix = time.monotonic(), time.time()
    ends = []
    for step in range(1, args.steps + 1):
        if faults.thread and step == max(1, args.fault_from):
            faults.thread.start()
        opt.zero_grad(set_to_none=True)
        micro = args.accum if args.loop == "lm" else 1
        for m in range(micro):
            x, y = next(loader)
            if m < micro - 1:
                with model.no_sync():
                    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()) / micro
                    loss.backward()
            else:
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()) / micro
                loss.backward()
        if args.loop == "lm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        value = loss.item()
        if args.loop == "lm":
            if rank == 0:
                log_progress(step, value, sched.get_last_lr()[0])
            if step % args.eval_every == 0:
                evaluate(model, held_out)
        faults.after_step(model, opt, step, workdir, value)
        ends.append(time.monotonic())
    faults.stop.set()
    dist.barrier()
    write_step_times(args.step_times, rank, start, start_unix, ends)
    shutil.rmtree(workdir, ignore_errors=True)
    # Leave without torch's exit deadlock (README, Known issues): the DDP reducer gone while the
    # group still lives, then the group.
    del model, opt, loss, loader
    gc.collect()
    dist.destroy_process_group()
    if rank == 0:
        print(f"train_lm: done: {os.environ['WORLD_SIZE']} ranks x {args.steps} steps in "
              f"{ends[-1] - start:.3f} s", flush=True)


if __name__ == "__main__":
    main()
