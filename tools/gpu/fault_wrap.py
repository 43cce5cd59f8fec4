"""Runs a training script as one rank, with a fault injected from outside the program.

Every rank uses cuda:0 (LOCAL_RANK is set to 0 inside Python, after the library has read the
real one). FAULT with FAULT_RANK makes one rank different, the way real jobs go wrong:
  slowdata   the DataLoader's fetch sleeps SLOW_S (0.002) per sample first (a slow disk)
  aux        the model's forward also runs extra GPU matmuls on that rank (AUX_ROUNDS, 8)
Usage: python3 fault_wrap.py SCRIPT ARGS...
"""
import os
import runpy
import sys
import time

rank = int(os.environ.get("RANK", "0"))
os.environ["LOCAL_RANK"] = "0"
fault = os.environ.get("FAULT", "none")
mine = rank == int(os.environ.get("FAULT_RANK", "-1"))
if mine and fault == "slowdata":
    from torch.utils.data._utils import fetch

    real_fetch = fetch._MapDatasetFetcher.fetch
    delay = float(os.environ.get("SLOW_S", "0.002"))

    def read_batch_slowly(self, possibly_batched_index):
        time.sleep(delay * len(possibly_batched_index))
        return real_fetch(self, possibly_batched_index)

    fetch._MapDatasetFetcher.fetch = read_batch_slowly
elif mine and fault == "aux":
    import torch
    import torch.nn as nn

    real_call = nn.Module.__call__

    def extra_gpu_work(x):
        w = torch.randn(2048, 2048, device="cuda:0")
        for _ in range(int(os.environ.get("AUX_ROUNDS", "8"))):
            w = torch.tanh(w @ w / 2048)
        return w.sum() * 0

    def call_with_aux(self, *args, **kwargs):
        out = real_call(self, *args, **kwargs)
        if type(self).__name__ == "LM":
            out = out + extra_gpu_work(out)
        return out

    nn.Module.__call__ = call_with_aux
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
