"""A real PyTorch DDP job on CPU (gloo), launched by torchrun: a DataLoader (in-process, so its
time is the main thread's), an MLP, SGD. `--slow-loader-rank R --slow-loader-ms MS` makes batch
collation on rank R that much slower: a slow data loader on one rank, which every other rank then
waits for in DDP's gradient all-reduce.
"""

import argparse
import gc
import os
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
    return p.parse_args()


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    delay_s = args.slow_loader_ms / 1000 if rank == args.slow_loader_rank else 0

    def collate(samples):
        if delay_s:
            time.sleep(delay_s)  # stand-in for slow decoding / augmentation on this rank
        return default_collate(samples)

    n = args.steps * args.batch
    data = TensorDataset(torch.randn(n, args.width), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=args.batch, num_workers=0, collate_fn=collate)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
        torch.nn.Linear(args.width, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dist.barrier()
    start = time.perf_counter()
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    dist.barrier()
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
