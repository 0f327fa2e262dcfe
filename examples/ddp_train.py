"""A DDP job logged by tallyboard: run with ``torchrun --standalone --nproc-per-node 2``.

Uses gloo on CPU (nccl when every rank has a GPU). Rank 0 writes one run: ``loss`` is the mean
over ranks and ``samples`` the sum, one point per step, and ``step_time_ms`` is a Stat aggregated
over the whole job (with the slowest rank). Every rank calls ``flush()``/``close()``: that is where
the values of all ranks are reduced, in one collective.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist
from tallyboard import Aggregation, Stat, SummaryWriter, TensorboardEventHandler
from tallyboard.monitor import register_event_handler
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logdir", default="runs/ddp")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()

    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= 2
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    torch.manual_seed(rank)

    model = DistributedDataParallel(torch.nn.Linear(8, 1).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    writer = SummaryWriter(args.logdir, reduce={"loss": "mean", "samples": "sum"})
    register_event_handler(TensorboardEventHandler(writer, across_ranks=True))
    step_time = Stat("step_time_ms", [Aggregation.MEAN, Aggregation.MAX], 1.0)

    for step in range(args.steps):
        start = time.perf_counter()
        x = torch.randn(args.batch, 8, device=device)
        loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        writer.add_scalar("loss", loss.item(), step)  # no collective here
        writer.add_scalar("samples", float(args.batch), step)
        step_time.add((time.perf_counter() - start) * 1000.0)
        if step % 10 == 9:
            writer.flush()  # every rank: one collective for the last 10 steps
    step_time.close()
    writer.close()
    if rank == 0:
        print(f"rank 0 wrote {args.logdir}: tensorboard --logdir {args.logdir}")
    dist.barrier()  # no rank tears gloo down while another still talks to it
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
