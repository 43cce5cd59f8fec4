"""Python-side fault knobs of sim_train (SIM_TRAIN_*), documented in test/simgpu/README.md.

Rank specs use the SIMGPU_* syntax: "R=V[,R=V]" where R is a rank, a range A-B, or *.
"""

import gc
import os
import threading
import time


def rank_value(env, rank, default=0.0):
    """The value `env` assigns to `rank` ("3=40,5-6=10"), or `default`."""
    spec = os.environ.get(env, "")
    for entry in filter(None, spec.split(",")):
        ranks, _, value = entry.partition("=")
        if ranks == "*":
            return float(value)
        first, _, last = ranks.partition("-")
        if int(first) <= rank <= int(last or first):
            return float(value)
    return default


class Faults:
    def __init__(self, rank):
        self.rank = rank
        self.loader_delay_s = rank_value("SIM_TRAIN_SLOW_LOADER", rank) / 1000.0
        self.sync_every_step = os.environ.get("SIM_TRAIN_HOST_SYNC_EVERY_STEP", "0") == "1"
        self.gc_objects = int(rank_value("SIM_TRAIN_GC_PRESSURE", rank) * 1000)
        self.busy_threads = int(rank_value("SIM_TRAIN_CPU_CONTENTION", rank))
        self.routine_s = rank_value("SIM_TRAIN_PY_ROUTINE", rank) / 1000.0
        self.cache_blocks = int(rank_value("SIM_TRAIN_EMPTY_CACHE", rank))
        self._heap = []
        self._stop = threading.Event()

    def start(self):
        if self.gc_objects:
            # Long-lived objects make every full collection expensive.
            self._heap = [{"i": i, "pad": [i]} for i in range(self.gc_objects * 10)]
        for _ in range(self.busy_threads):
            threading.Thread(target=self._spin, daemon=True, name="cpu-contention").start()

    def stop(self):
        self._stop.set()

    def slow_loader(self):
        if self.loader_delay_s:
            time.sleep(self.loader_delay_s)

    def make_garbage(self):
        """Reference cycles only the cyclic GC can free, and a full collection every step: the
        pause traverses the long-lived heap, so it is the collector's time that grows, not the
        Python that made the garbage."""
        for _ in range(self.gc_objects // 10):
            a = []
            a.append(a)
        if self.gc_objects:
            gc.collect()

    def empty_cache(self):
        """A caching allocator emptied every step (torch.cuda.empty_cache() in the loop): the
        step's blocks are allocated anew and freed, and each cudaFree waits for the device, so the
        host can no longer run ahead of it."""
        if not self.cache_blocks:
            return
        from simtorch import cuda
        blocks = [cuda.Buffer(64 << 20) for _ in range(self.cache_blocks)]
        for block in blocks:
            block.free()

    def bookkeeping(self):
        """Pure-Python work after every step (metrics, logging code), as long as the knob says:
        longer than the device's backlog, it leaves the GPU idle."""
        end = time.perf_counter() + self.routine_s
        tally = 0
        while time.perf_counter() < end:
            tally += sum(i * i for i in range(100))
        return tally

    def _spin(self):
        # Competes for the GIL and a core. The interpreter switches threads only between
        # bytecodes, so one long builtin call holds the GIL throughout, as a background thread
        # serializing a large object does: the training loop waits for it each time it wants
        # the GIL back.
        while not self._stop.is_set():
            sum(range(500_000))
