"""Real multi-process jobs for the distributed tests: gloo ranks on 127.0.0.1, a hard timeout.

``run_job(fn, world, *args)`` starts ``world`` spawned processes; each sets the torchrun
variables, joins a gloo process group and returns ``fn(rank, world, *args)`` (a picklable value)
or its traceback. Processes still alive at the deadline are killed, so no test can hang.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(
    fn: Callable[..., Any], rank: int, world: int, port: int, args: tuple[Any, ...], results: Any
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
    )
    try:
        import torch.distributed as dist

        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
        results.put((rank, "ok", fn(rank, world, *args)))
    except BaseException:
        results.put((rank, "error", traceback.format_exc()))
    finally:
        results.close()
        results.join_thread()
        os._exit(0)  # no teardown that could wait on a rank that is gone


def run_job(
    fn: Callable[..., Any], world: int, *args: Any, timeout: float = 90.0
) -> dict[int, Any]:
    """``{rank: result}`` of the ranks that finished; raises if a rank failed with an error."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(target=_worker, args=(fn, rank, world, port, args, results))
        for rank in range(world)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    done: dict[int, Any] = {}
    errors: list[str] = []
    try:
        while len(done) + len(errors) < world and time.monotonic() < deadline:
            try:
                rank, status, value = results.get(timeout=0.2)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    try:  # the last results may still be in the pipe
                        rank, status, value = results.get(timeout=1.0)
                    except queue.Empty:
                        break
                else:
                    continue
            if status == "ok":
                done[rank] = value
            else:
                errors.append(f"rank {rank}:\n{value}")
    finally:
        for p in procs:
            p.join(max(0.0, min(5.0, deadline - time.monotonic())))
            if p.is_alive():
                p.kill()
                p.join()
    if errors:
        raise AssertionError("\n".join(errors))
    return done
