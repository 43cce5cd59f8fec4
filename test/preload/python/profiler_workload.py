"""torch.profiler(with_stack=True) under the hooks: it must see the same Python stacks as
without them (it uses setprofile; we chain the frame evaluator and never touch it)."""
import torch
from torch.profiler import profile


def f(x):
    return x * 2


def step():
    for _ in range(20):
        f(torch.ones(4))


with profile(with_stack=True) as p:
    step()
events = [e for e in p.events() if any("profiler_workload.py" in s for s in (e.stack or []))]
print("profiler events with our frames:", len(events))
print("workload: done")
