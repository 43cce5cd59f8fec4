"""A 2-rank CPU/gloo DDP job with a DataLoader (one forked worker), SGD, and an explicit
all_reduce of the loss every step and a barrier at the end. Run by ddp_test.py under torchrun."""
import gc
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset

STEPS = 12


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(STEPS * 8, 16), torch.randn(STEPS * 8, 1))
    loader = DataLoader(data, batch_size=8, num_workers=1)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                                        torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    it = iter(loader)
    for _ in range(STEPS):
        x, y = next(it)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        dist.all_reduce(loss.detach())
    # Leave without torch's exit deadlock (README, Known issues): no collective work left
    # holding tensors, the DDP reducer gone while the group still lives, then the group.
    dist.barrier()
    del model, opt, loss, x, y, it, loader
    gc.collect()
    dist.destroy_process_group()
    print(f"ddp_job: rank {os.environ['RANK']} done")


if __name__ == "__main__":
    main()
