"""AdamW over all parameters of the rank: one fused multi-tensor kernel, as torch's fused=True."""

from simtorch import _C


class AdamW:
    # param (bf16) + grad (bf16) + two fp32 moments + fp32 master copy, read and written.
    BYTES_PER_PARAM_BYTE = 8

    def __init__(self, param_bytes):
        self.param_bytes = param_bytes

    def zero_grad(self, stream=0):
        _C.elementwise("fill", self.param_bytes, stream)

    def step(self, stream=0):
        _C.elementwise("adamw", self.param_bytes * self.BYTES_PER_PARAM_BYTE, stream)
