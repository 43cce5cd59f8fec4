"""Pipeline parallelism (GPipe schedule) with data parallelism inside each stage.

World ranks form a grid: stage = rank // dp, dp_rank = rank % dp. Stages do different work, as
in a real pipeline: stage 0 also runs the data loader and the embedding, the last stage the LM
head and the loss, so its step is longer; activations and their gradients travel between stages
with ncclSend/ncclRecv on the compute stream.
"""

from simtorch import cuda, nn
from simtorch.distributed import DistributedDataParallel


class PipelineStage:
    def __init__(self, args, rank, world, group, loss):
        self.stages = args.pp_stages
        self.dp = world // self.stages
        self.stage = rank // self.dp
        self.dp_rank = rank % self.dp
        self.microbatches = args.microbatches
        tokens = args.seq * args.micro_batch
        self.act_bytes = tokens * args.hidden * nn.BF16
        per_stage = max(1, args.layers // self.stages)
        first = self.stage * per_stage
        modules = [nn.TransformerLayer(first + i, args.hidden, args.heads, args.seq,
                                       args.micro_batch) for i in range(per_stage)]
        if self.stage == 0:
            modules.insert(0, nn.Embedding(args.vocab, args.hidden, tokens))
        if self.is_last:
            modules.append(nn.LMHead(args.vocab, args.hidden, tokens, loss))
        self.model = nn.Model(modules)
        # Split the world twice: a pipeline group per dp_rank, a data-parallel group per stage.
        self.pp_group = group.split(self.dp_rank, self.stage, self.stage, self.stages)
        self.dp_group = group.split(self.stages + self.stage, self.dp_rank, self.dp_rank, self.dp)
        self.ddp = DistributedDataParallel(self.model, self.dp_group, args.bucket_mb << 20)
        self.activations = cuda.Buffer(self.act_bytes)

    @property
    def is_last(self):
        return self.stage == self.stages - 1

    def forward(self, batch):
        for _ in range(self.microbatches):
            if self.stage > 0:
                self.pp_group.recv(self.activations.ptr, self.act_bytes, self.stage - 1)
            self.model.forward(batch)
            if not self.is_last:
                self.pp_group.send(self.activations.ptr, self.act_bytes, self.stage + 1)

    def backward(self):
        for micro in reversed(range(self.microbatches)):
            if not self.is_last:
                self.pp_group.recv(self.activations.ptr, self.act_bytes, self.stage + 1)
            if micro == 0:
                self.ddp.backward()  # last microbatch: reduce gradients as they are ready
            else:
                self.model.backward()
            if self.stage > 0:
                self.pp_group.send(self.activations.ptr, self.act_bytes, self.stage - 1)
