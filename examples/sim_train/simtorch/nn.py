"""Transformer-shaped modules whose forward and backward launch kernels (bf16 shapes)."""

import queue
import threading

from simtorch import _C, cuda

BF16 = 2


class _DeviceThread:
    """Autograd's engine: the backward pass runs on a thread of its own per device, which launches
    its kernels (and, through DDP's hooks, its all-reduces) while the training thread waits for
    it. Profilers that watch only the training thread see a long wait and an idle device."""

    def __init__(self):
        self._work = queue.SimpleQueue()
        self._thread = None

    def run(self, fn):
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, args=(cuda.current_device(),),
                                            name="simtorch-autograd", daemon=True)
            self._thread.start()
        done, failure = threading.Event(), []
        self._work.put((fn, done, failure))
        done.wait()
        if failure:
            raise failure[0]

    def _serve(self, device):
        cuda.set_device(device)
        while True:
            fn, done, failure = self._work.get()
            try:
                fn()
            except BaseException as e:  # handed to the waiting caller, as autograd does
                failure.append(e)
            done.set()


_autograd = _DeviceThread()


class TransformerLayer:
    def __init__(self, index, hidden, heads, seq, micro_batch):
        self.index = index
        self.h = hidden
        self.heads = heads
        self.seq = seq
        self.mb = micro_batch
        self.tokens = seq * micro_batch
        self.param_bytes = 12 * hidden * hidden * BF16

    def forward(self, stream=0):
        t, h = self.tokens, self.h
        _C.elementwise("layer_norm", t * h * BF16 * 2, stream)
        _C.gemm(t, 3 * h, h, stream)  # qkv
        _C.attention(self.mb, self.heads, self.seq, h // self.heads, False, stream)
        _C.gemm(t, h, h, stream)  # output projection
        _C.elementwise("add", t * h * BF16 * 3, stream)
        _C.elementwise("layer_norm", t * h * BF16 * 2, stream)
        _C.gemm(t, 4 * h, h, stream)  # mlp up
        _C.elementwise("gelu", t * 4 * h * BF16 * 2, stream)
        _C.gemm(t, h, 4 * h, stream)  # mlp down
        _C.elementwise("add", t * h * BF16 * 3, stream)

    def backward(self, stream=0):
        t, h = self.tokens, self.h
        for m, n, k in ((t, h, 4 * h), (t, 4 * h, h)):  # mlp: data grad + weight grad
            _C.gemm(m, k, n, stream)
            _C.gemm(k, n, m, stream)
        _C.elementwise("gelu", t * 4 * h * BF16 * 3, stream)
        _C.elementwise("layer_norm", t * h * BF16 * 3, stream)
        _C.gemm(t, h, h, stream)
        _C.gemm(h, h, t, stream)
        _C.attention(self.mb, self.heads, self.seq, h // self.heads, True, stream)
        _C.gemm(t, h, 3 * h, stream)
        _C.gemm(3 * h, h, t, stream)
        _C.elementwise("layer_norm", t * h * BF16 * 3, stream)


class Embedding:
    def __init__(self, vocab, hidden, tokens):
        self.vocab, self.h, self.tokens = vocab, hidden, tokens
        self.param_bytes = vocab * hidden * BF16

    def forward(self, stream=0):
        _C.elementwise("embedding", self.tokens * self.h * BF16, stream)

    def backward(self, stream=0):
        _C.elementwise("add", self.tokens * self.h * BF16 * 2, stream)


class LMHead:
    """Output projection + cross-entropy; its loss lives in a 4-byte device buffer."""

    def __init__(self, vocab, hidden, tokens, loss_buffer):
        self.vocab, self.h, self.tokens = vocab, hidden, tokens
        self.param_bytes = vocab * hidden * BF16
        self.loss = loss_buffer

    def forward(self, stream=0):
        _C.gemm(self.tokens, self.vocab, self.h, stream)
        _C.elementwise("softmax_xent", self.tokens * self.vocab * BF16 * 2, stream)
        return self.loss

    def backward(self, stream=0):
        _C.elementwise("softmax_xent", self.tokens * self.vocab * BF16 * 2, stream)
        _C.gemm(self.tokens, self.h, self.vocab, stream)
        _C.gemm(self.vocab, self.h, self.tokens, stream)


class Model:
    """A stack of modules; backward visits them in reverse, on the device thread as autograd does,
    and reports each finished module to `on_grad_ready` (how DDP's reducer learns that a bucket
    can be all-reduced: its all-reduces are launched from that thread too)."""

    def __init__(self, modules):
        self.modules = modules

    @property
    def param_bytes(self):
        return sum(m.param_bytes for m in self.modules)

    def forward(self, batch, stream=0):
        out = None
        for module in self.modules:
            out = module.forward(stream)
        return out

    def backward(self, on_grad_ready=None, stream=0):
        _autograd.run(lambda: self._run_backward(on_grad_ready, stream))

    def _run_backward(self, on_grad_ready, stream):
        for module in reversed(self.modules):
            module.backward(stream)
            if on_grad_ready:
                on_grad_ready(module)
