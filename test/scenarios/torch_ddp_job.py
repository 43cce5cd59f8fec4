"""A real PyTorch DDP job on CPU (gloo), launched by torchrun: a DataLoader (in-process, so its
time is the main thread's), an MLP, SGD. `--slow-loader-rank R --slow-loader-ms MS` makes batch
collation on rank R that much slower: a slow data loader on one rank, which every other rank then
waits for in DDP's gradient all-reduce. `--loader-workers N` moves loading into N worker
processes started with `--loader-start` (`spawn` by default, common with CUDA; `fork` is Linux's
default): the slow collation then runs in them, and the rank's main thread only waits for their
batches. `--checkpoint-every N --checkpoint-mb MB` makes
rank 0 save a checkpoint with `torch.save` every N steps from the job's own function (the other
ranks wait for it in the next all-reduce). `--busy-thread-ranks 1` (or `all`) starts a thread on
those ranks that holds the GIL in long builtin calls, as a metrics exporter serializing large
records does. `--batch-rank R --batch-scale S` gives rank R S times its peers' batch.
"""

import argparse
import gc
import os
import shutil
import tempfile
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data._utils.collate import default_collate


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--slow-loader-rank", type=int, default=-1)
    p.add_argument("--slow-loader-ms", type=float, default=0)
    p.add_argument("--loader-workers", type=int, default=0)
    p.add_argument("--loader-start", default="spawn", choices=["spawn", "fork", "forkserver"])
    p.add_argument("--routine-ms", type=float, default=0,
                   help="a pure-Python routine after every step, this long, on every rank")
    p.add_argument("--checkpoint-every", type=int, default=0,
                   help="rank 0 saves a checkpoint every this many steps")
    p.add_argument("--checkpoint-mb", type=int, default=0,
                   help="optimizer-state-like payload saved with the model, in MiB")
    p.add_argument("--busy-thread-ranks", default="",
                   help="these ranks (comma-separated, or 'all') run a Python thread that "
                        "holds the GIL in long builtin calls")
    p.add_argument("--batch-rank", type=int, default=-1,
                   help="this rank trains on --batch-scale times the batch of its peers")
    p.add_argument("--batch-scale", type=int, default=1)
    return p.parse_args()


def summarize_step(loss, budget_s):
    """A per-step routine in plain Python (stand-in for metric bookkeeping or logging code): the
    same on every rank, so no rank deviates from its peers."""
    end = time.perf_counter() + budget_s
    history = []
    while time.perf_counter() < end:
        history.append(sum(i * i for i in range(200)))
    return loss, len(history)


def encode_metrics(stop):
    """A background thread's work (a stand-in for a metrics exporter or a logger serializing a
    large record): each call is one long builtin, which keeps the GIL throughout, so the
    training thread waits for the interpreter every time it wants it back."""
    while not stop.is_set():
        sum(range(500_000))


def save_checkpoint(model, opt, step, directory, payload):
    """The job's own checkpoint function: the model, the optimizer and a payload standing in for
    optimizer moments, through torch.save (pickling, zip records, file writes underneath)."""
    state = {"step": step, "model": model.module.state_dict(), "optimizer": opt.state_dict(),
             "moments": payload}
    path = os.path.join(directory, f"step-{step}.pt")
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


class SlowCollate:
    """Batch collation, `delay_s` slower (a stand-in for slow decoding or augmentation); a
    module-level class so that spawned loader workers can unpickle it."""

    def __init__(self, delay_s):
        self.delay_s = delay_s

    def __call__(self, samples):
        if self.delay_s:
            time.sleep(self.delay_s)
        return default_collate(samples)


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    delay_s = args.slow_loader_ms / 1000 if rank == args.slow_loader_rank else 0

    collate = SlowCollate(delay_s)
    batch = args.batch * (args.batch_scale if rank == args.batch_rank else 1)
    n = args.steps * batch
    data = TensorDataset(torch.randn(n, args.width), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=batch, num_workers=args.loader_workers,
                        collate_fn=collate,
                        multiprocessing_context=args.loader_start if args.loader_workers else None)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    checkpoints = payload = None
    if args.checkpoint_every and rank == 0:
        checkpoints = tempfile.mkdtemp(prefix="torch_ddp_job-ckpt.")
        payload = torch.randn(args.checkpoint_mb << 18)
    stop_busy = threading.Event()
    if args.busy_thread_ranks == "all" or str(rank) in args.busy_thread_ranks.split(","):
        threading.Thread(target=encode_metrics, args=(stop_busy,), daemon=True,
                         name="metrics").start()
    dist.barrier()
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader, start=1):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if args.routine_ms:
            summarize_step(loss, args.routine_ms / 1000)
        if checkpoints and step % args.checkpoint_every == 0:
            save_checkpoint(model, opt, step, checkpoints, payload)
    stop_busy.set()
    dist.barrier()
    if checkpoints:
        shutil.rmtree(checkpoints, ignore_errors=True)
    loop_s = time.perf_counter() - start
    # Leave without torch's exit deadlock (README, Known issues): no collective work left
    # holding tensors, the DDP reducer gone while the group still lives, then the group.
    del model, opt, loss, x, y, loader
    gc.collect()
    dist.destroy_process_group()
    if rank == 0:
        print(f"torch_ddp_job: done: {os.environ['WORLD_SIZE']} ranks x {args.steps} steps "
              f"in {loop_s:.3f} s", flush=True)


if __name__ == "__main__":
    main()
