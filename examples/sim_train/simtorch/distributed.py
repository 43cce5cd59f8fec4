"""Process groups over NCCL, the way ProcessGroupNCCL builds them: rank 0 creates the
ncclUniqueId and shares it through the torch.distributed store (or a file), every rank calls
ncclCommInitRank, and collectives run on a dedicated NCCL stream ordered by events."""

import os
import time

from simtorch import _C, cuda

_UID_KEY = "simtorch_nccl_unique_id"


def _exchange_uid_torch(rank):
    import torch.distributed as dist  # the real torch: gloo group + TCP store from torchrun

    if not dist.is_initialized():
        dist.init_process_group("gloo")
    store = dist.distributed_c10d._get_default_store()
    if rank == 0:
        store.set(_UID_KEY, _C.nccl_unique_id())
    return bytes(store.get(_UID_KEY))


def _exchange_uid_file(rank):
    run = os.environ.get("TORCHELASTIC_RUN_ID", os.environ.get("MASTER_PORT", "local"))
    path = os.path.join(os.environ.get("SIM_TRAIN_ID_DIR", "/tmp"), f"simtorch-uid-{run}")
    if rank == 0:
        with open(path + ".tmp", "wb") as f:
            f.write(_C.nccl_unique_id())
        os.replace(path + ".tmp", path)
    deadline = time.time() + 120
    while not os.path.exists(path):
        if time.time() > deadline:
            raise RuntimeError(f"no NCCL unique id at {path}")
        time.sleep(0.01)
    with open(path, "rb") as f:
        return f.read()


def barrier():
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()


class ProcessGroupNCCL:
    def __init__(self, rank, world_size, comm=None):
        self.rank, self.size = rank, world_size
        if comm is None:
            how = os.environ.get("SIM_TRAIN_ID_EXCHANGE", "torch")
            uid = _exchange_uid_torch(rank) if how == "torch" else _exchange_uid_file(rank)
            comm = _C.nccl_init(world_size, rank, uid)
        self.comm = comm
        self.stream = cuda.Stream(priority=-1)
        self._ready = cuda.Event()
        self._done = cuda.Event()

    def split(self, color, key, rank, size):
        """ncclCommSplit (every rank of this group calls it); `rank`/`size` are ours in the
        child, which the caller knows from its own layout."""
        return ProcessGroupNCCL(rank, size, comm=_C.nccl_split(self.comm, color, key))

    def all_reduce(self, ptr, nbytes, stream=cuda.DEFAULT_STREAM):
        """Async all-reduce of `nbytes` of bf16 gradients after the work queued on `stream`."""
        self._ready.record(stream)
        self.stream.wait_event(self._ready)
        _C.all_reduce(self.comm, ptr, nbytes // 2, self.stream.handle)

    def wait(self, stream=cuda.DEFAULT_STREAM):
        """work.wait(): `stream` continues only after the collectives issued so far."""
        self._done.record(self.stream.handle)
        _C.stream_wait_event(stream, self._done.handle)

    def send(self, ptr, nbytes, peer, stream=cuda.DEFAULT_STREAM):
        _C.send(self.comm, ptr, nbytes // 2, peer, stream)

    def recv(self, ptr, nbytes, peer, stream=cuda.DEFAULT_STREAM):
        _C.recv(self.comm, ptr, nbytes // 2, peer, stream)

    def destroy(self):
        _C.nccl_destroy(self.comm)


class DistributedDataParallel:
    """Gradient buckets all-reduced while backward still runs (DDP's reducer)."""

    def __init__(self, model, group, bucket_bytes):
        self.model, self.group, self.bucket_bytes = model, group, bucket_bytes
        self.grads = cuda.Buffer(max(model.param_bytes, 1))
        self._pending = 0
        self._offset = 0

    def forward(self, batch, stream=cuda.DEFAULT_STREAM):
        return self.model.forward(batch, stream)

    def backward(self, stream=cuda.DEFAULT_STREAM):
        self._pending = self._offset = 0
        self.model.backward(self._grad_ready, stream)
        self._flush(stream)
        self.group.wait(stream)  # the optimizer must see reduced gradients

    def _grad_ready(self, module):
        self._pending += module.param_bytes
        while self._pending >= self.bucket_bytes:
            self._reduce(self.bucket_bytes)

    def _flush(self, stream=cuda.DEFAULT_STREAM):
        if self._pending:
            self._reduce(self._pending, stream)

    def _reduce(self, nbytes, stream=cuda.DEFAULT_STREAM):
        self.group.all_reduce(self.grads.ptr + self._offset % self.grads.nbytes, nbytes, stream)
        self._offset += nbytes
        self._pending -= nbytes
