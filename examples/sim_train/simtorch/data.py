"""A DataLoader-shaped iterator: host-side batch preparation, then an async H2D copy."""

import random

from simtorch import cuda


class DataLoader:
    def __init__(self, tokens_per_batch, steps, faults, seed=0, input_bytes=0):
        self.tokens = tokens_per_batch
        self.steps = steps
        self.faults = faults
        self.rng = random.Random(seed)
        # Token ids by default; larger inputs (images, packed features) make the copy matter.
        size = input_bytes or tokens_per_batch * 8
        self.pinned = cuda.Buffer(size, pinned_host=True)
        self.device = cuda.Buffer(size)
        self.step = 0

    def __iter__(self):
        self.step = 0
        return self

    def __next__(self):
        if self.step >= self.steps:
            raise StopIteration
        self.step += 1
        self._collate()
        self.faults.slow_loader()
        self.device.copy_from(self.pinned)  # input ids to the GPU, asynchronous
        return self.device

    def _collate(self):
        # Stand-in for tokenization/collation: a little deterministic host work.
        total = 0
        for _ in range(200):
            total += self.rng.randrange(32000)
        return total
