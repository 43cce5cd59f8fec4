"""Tensor parallelism (Megatron-style) with data parallelism across the tensor-parallel groups.

World ranks form a grid: tp_rank = rank % tp, dp_rank = rank // tp, so a tensor-parallel group is
tp consecutive ranks (one node's NVLink domain, as Megatron places them). Each rank holds 1/tp of
every layer: attention heads and the MLP's hidden columns are split, and the partial outputs are
summed with an all-reduce on the tensor-parallel group twice per layer forward and twice
backward, on the compute stream's critical path (the next kernel needs the sum). Gradients are
all-reduced across the data-parallel group (same tp_rank in every replica) during backward.
"""

from simtorch import _C, cuda, nn
from simtorch.distributed import DistributedDataParallel


class TensorParallelLayer:
    def __init__(self, index, args, tp, tp_group, scratch):
        self.index, self.tp, self.group, self.scratch = index, tp, tp_group, scratch
        self.h, self.heads = args.hidden, args.heads
        self.seq, self.mb = args.seq, args.micro_batch
        self.tokens = args.seq * args.micro_batch
        self.param_bytes = 12 * self.h * self.h * nn.BF16 // tp

    def _sum_partials(self, stream):
        """The row-parallel output's partial sums, added across the group before the next op."""
        self.group.all_reduce(self.scratch.ptr, self.tokens * self.h * nn.BF16, stream)
        self.group.wait(stream)

    def forward(self, stream=0):
        t, h, tp = self.tokens, self.h, self.tp
        _C.elementwise("layer_norm", t * h * nn.BF16 * 2, stream)
        _C.gemm(t, 3 * h // tp, h, stream)  # qkv, column-parallel
        _C.attention(self.mb, self.heads // tp, self.seq, h // self.heads, False, stream)
        _C.gemm(t, h, h // tp, stream)  # output projection, row-parallel
        self._sum_partials(stream)
        _C.elementwise("add", t * h * nn.BF16 * 3, stream)
        _C.elementwise("layer_norm", t * h * nn.BF16 * 2, stream)
        _C.gemm(t, 4 * h // tp, h, stream)  # mlp up, column-parallel
        _C.elementwise("gelu", t * 4 * h // tp * nn.BF16 * 2, stream)
        _C.gemm(t, h, 4 * h // tp, stream)  # mlp down, row-parallel
        self._sum_partials(stream)
        _C.elementwise("add", t * h * nn.BF16 * 3, stream)

    def backward(self, stream=0):
        t, h, tp = self.tokens, self.h, self.tp
        _C.gemm(t, 4 * h // tp, h, stream)  # mlp down: data grad
        _C.gemm(4 * h // tp, h, t, stream)  # weight grad
        _C.elementwise("gelu", t * 4 * h // tp * nn.BF16 * 3, stream)
        _C.gemm(t, h, 4 * h // tp, stream)  # mlp up: data grad (partial)
        _C.gemm(h, 4 * h // tp, t, stream)
        self._sum_partials(stream)
        _C.elementwise("layer_norm", t * h * nn.BF16 * 3, stream)
        _C.gemm(t, h // tp, h, stream)
        _C.gemm(h, h // tp, t, stream)
        _C.attention(self.mb, self.heads // tp, self.seq, h // self.heads, True, stream)
        _C.gemm(t, h, 3 * h // tp, stream)  # qkv: data grad (partial)
        _C.gemm(3 * h // tp, h, t, stream)
        self._sum_partials(stream)
        _C.elementwise("layer_norm", t * h * nn.BF16 * 3, stream)


class TensorParallelModel:
    def __init__(self, args, rank, world, group, loss):
        self.tp = args.tp_size
        self.dp = world // self.tp
        self.tp_rank, self.dp_rank = rank % self.tp, rank // self.tp
        tokens = args.seq * args.micro_batch
        # Split the world twice: a tensor-parallel group per replica, a data-parallel group per
        # tp_rank.
        self.tp_group = group.split(self.dp_rank, self.tp_rank, self.tp_rank, self.tp)
        self.dp_group = group.split(self.dp + self.tp_rank, self.dp_rank, self.dp_rank, self.dp)
        self.scratch = cuda.Buffer(tokens * args.hidden * nn.BF16)
        vocab = args.vocab // self.tp  # vocabulary-parallel embedding and head
        modules = [nn.Embedding(vocab, args.hidden, tokens)]
        modules += [TensorParallelLayer(i, args, self.tp, self.tp_group, self.scratch)
                    for i in range(args.layers)]
        modules.append(nn.LMHead(vocab, args.hidden, tokens, loss))
        self.model = nn.Model(modules)
        self.ddp = DistributedDataParallel(self.model, self.dp_group, args.bucket_mb << 20)

    def forward(self, batch):
        self.ddp.forward(batch)

    def backward(self):
        self.ddp.backward()
