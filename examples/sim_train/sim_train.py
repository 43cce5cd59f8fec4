"""sim_train: a training job on the simulated GPU cluster, launched by torchrun.

  data-parallel (--mode dp): DataLoader.__next__ -> model.forward -> ddp.backward (gradient
  buckets all-reduced during backward) -> optimizer.step, with a loss.item() host sync every
  --log-every steps.
  pipeline-parallel (--mode pp): GPipe over --pp-stages stages, data-parallel inside a stage.
  tensor-parallel (--mode tp): layers split over --tp-size consecutive ranks (an all-reduce of
  the partial outputs twice per layer forward and backward), data-parallel across the groups.

See README.md for the launch command and the SIM_TRAIN_* fault knobs.
"""

import argparse
import json
import os
import sys
import time

from simtorch import cuda, nn, optim
from simtorch.data import DataLoader
from simtorch.distributed import DistributedDataParallel, ProcessGroupNCCL, barrier
from simtorch.faults import Faults
from simtorch.pipeline import PipelineStage
from simtorch.tensor_parallel import TensorParallelModel


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("dp", "pp", "tp"), default="dp")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--bucket-mb", type=int, default=200)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--pp-stages", type=int, default=2)
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--tp-size", type=int, default=2)
    p.add_argument("--input-mb", type=int, default=0,
                   help="bytes copied host-to-device per batch, in MiB (default: the token ids)")
    return p.parse_args(argv)


def build_dp(args, rank, group, loss):
    tokens = args.seq * args.micro_batch
    modules = [nn.Embedding(args.vocab, args.hidden, tokens)]
    modules += [nn.TransformerLayer(i, args.hidden, args.heads, args.seq, args.micro_batch)
                for i in range(args.layers)]
    modules.append(nn.LMHead(args.vocab, args.hidden, tokens, loss))
    model = nn.Model(modules)
    return model, DistributedDataParallel(model, group, args.bucket_mb << 20)


class Trainer:
    def __init__(self, args, rank, world, faults):
        self.args, self.rank, self.faults = args, rank, faults
        self.group = ProcessGroupNCCL(rank, world)
        self.loss = cuda.Buffer(4)
        self.step_start, self.step_end = cuda.Event(timing=True), cuda.Event(timing=True)
        if args.mode == "pp":
            self.pipeline = PipelineStage(args, rank, world, self.group, self.loss)
            self.optimizer = optim.AdamW(self.pipeline.model.param_bytes)
        elif args.mode == "tp":
            self.model = TensorParallelModel(args, rank, world, self.group, self.loss)
            self.optimizer = optim.AdamW(self.model.model.param_bytes)
        else:
            self.model, self.ddp = build_dp(args, rank, self.group, self.loss)
            self.optimizer = optim.AdamW(self.model.param_bytes)
        tokens = args.seq * args.micro_batch
        self.loader = DataLoader(tokens, args.iters, faults, seed=rank,
                                 input_bytes=args.input_mb << 20)

    def train_step(self, batch):
        self.optimizer.zero_grad()
        if self.args.mode == "pp":
            self.pipeline.forward(batch)
            self.pipeline.backward()
        elif self.args.mode == "tp":
            self.model.forward(batch)
            self.model.backward()
        else:
            self.ddp.forward(batch)
            self.ddp.backward()
        self.optimizer.step()

    def run(self):
        wall0, start_unix = time.monotonic(), time.time()
        self.step_ends = []
        for step, batch in enumerate(self.loader, start=1):
            self.step_start.record()
            self.train_step(batch)
            self.step_end.record()
            self.faults.make_garbage()
            self.faults.empty_cache()
            if self.faults.routine_s:
                self.faults.bookkeeping()
            if self.faults.sync_every_step or step % self.args.log_every == 0:
                self.loss.item()  # the periodic host synchronization of a training loop
            if step % self.args.log_every == 0:
                sim_ms = self.step_start.elapsed_time(self.step_end)
                print(f"rank {self.rank} step {step} step_sim_ms {sim_ms:.1f}", flush=True)
            self.step_ends.append(time.monotonic())
        cuda.synchronize()
        self.step_ends.append(time.monotonic())
        write_step_times(self.rank, wall0, start_unix, self.step_ends)
        return time.monotonic() - wall0


def write_step_times(rank, start, start_unix, ends):
    """SIM_TRAIN_STEP_TIMES=PREFIX: each rank writes when its steps ended (host time, seconds
    from the loop's start; the last entry after the device drained), as PREFIX.rank<R>.json: the
    job's own measure of its pace, independent of the profiler (bench/accuracy)."""
    prefix = os.environ.get("SIM_TRAIN_STEP_TIMES")
    if prefix:
        with open(f"{prefix}.rank{rank}.json", "w") as f:
            json.dump({"rank": rank, "start_unix": start_unix,
                       "ends_s": [round(t - start, 6) for t in ends]}, f)


def main(argv):
    args = parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.mode == "pp" and world % args.pp_stages:
        sys.exit(f"sim_train: world size {world} is not a multiple of --pp-stages")
    if args.mode == "tp" and (world % args.tp_size or args.hidden % args.tp_size or
                              args.heads % args.tp_size):
        sys.exit("sim_train: --tp-size must divide the world size, --hidden and --heads")
    cuda.init(local_rank)
    faults = Faults(rank)
    faults.start()
    trainer = Trainer(args, rank, world, faults)
    wall = trainer.run()
    faults.stop()
    barrier()
    trainer.group.destroy()
    if rank == 0:
        print(f"sim_train: done: {world} ranks x {args.iters} iterations ({args.mode}) "
              f"in {wall:.2f} s wall", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
