"""Streams, events and device buffers (the torch.cuda part)."""

from simtorch import _C

DEFAULT_STREAM = 0  # the legacy default stream, like torch.cuda.default_stream()


_device = 0


def init(device):
    """Select the device and create its context; returns its properties."""
    global _device
    _device = device
    return _C.init(device)


def current_device():
    return _device


def set_device(device):
    """Select the device on the calling thread (CUDA's current device is per thread)."""
    _C.set_device(device)


class Stream:
    def __init__(self, priority=0):
        self.handle = _C.stream_create(True, priority)

    def wait_event(self, event):
        _C.stream_wait_event(self.handle, event.handle)

    def synchronize(self):
        _C.stream_synchronize(self.handle)


class Event:
    def __init__(self, timing=False):
        self.handle = _C.event_create(timing)

    def record(self, stream=DEFAULT_STREAM):
        _C.event_record(self.handle, stream)

    def elapsed_time(self, end):
        return _C.event_elapsed(self.handle, end.handle)


def synchronize():
    _C.device_synchronize()


class Buffer:
    """A device allocation; `item()` is the synchronous read that a loss.item() performs."""

    def __init__(self, nbytes, pinned_host=False):
        self.nbytes = nbytes
        self.pinned_host = pinned_host
        self.ptr = _C.malloc(nbytes, pinned_host)

    def item(self):
        return _C.item(self.ptr)

    def free(self):
        """Returns the memory (cudaFree, which waits for the device's queue first)."""
        if self.ptr:
            _C.free(self.ptr, self.pinned_host)
            self.ptr = 0

    def copy_from(self, other, stream=DEFAULT_STREAM):
        _C.copy_async(self.ptr, other.ptr, min(self.nbytes, other.nbytes), stream)
