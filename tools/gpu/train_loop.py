"""A real training loop in a script body, for real-GPU runs under the library (tools/gpu/run_jobs.sh).

A small causal transformer LM on random tokens, AdamW, bf16 autocast, gradient clipping, a
DataLoader over a map-style dataset; DDP over gloo when started by torchrun (every rank on
cuda:0, so several ranks share one GPU). Prints nanoGPT's log line, 'iter N: loss X, time Y ms',
so ../shared/gpu/step_ms.py reads the program's own step time. The loop is the module body on
purpose: users write it that way, and the analyzer must never blame it.
Environment: ITERS (60), WORKERS (0: load in the rank), BATCH (16), SEQ (256), LAYERS (6).
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

iters = int(os.environ.get("ITERS", "60"))
batch = int(os.environ.get("BATCH", "16"))
seq = int(os.environ.get("SEQ", "256"))
layers = int(os.environ.get("LAYERS", "6"))
vocab = 8192
distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", "0"))
if distributed:
    dist.init_process_group("gloo")
device = torch.device("cuda:0")
torch.manual_seed(1234 + rank)


class RandomTokens(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, vocab, (seq + 1,), generator=g)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, 384)
        block = nn.TransformerEncoderLayer(384, 6, 1536, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.head = nn.Linear(384, vocab)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        return self.head(self.blocks(self.embed(x), mask=mask, is_causal=True))


model = LM().to(device)
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
loader = DataLoader(RandomTokens(), batch_size=batch, shuffle=True,
                    num_workers=int(os.environ.get("WORKERS", "0")), drop_last=True)
batches = iter(loader)
t0 = time.time()
for step in range(iters):
    tokens = next(batches).to(device, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab).float(),
                                           tokens[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    lossf = loss.item()
    t1 = time.time()
    if rank == 0:
        print(f"iter {step}: loss {lossf:.4f}, time {(t1 - t0) * 1000:.2f}ms", flush=True)
    t0 = t1
if distributed:
    dist.destroy_process_group()
