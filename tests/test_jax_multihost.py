"""Multi-host jax jobs with real jax processes: two CPU processes joined by ``jax.distributed``
on 127.0.0.1. CLU's rule (only the process whose ``jax.process_index()`` is 0 writes files), and
tallyboard's rank-aware writers: the process index is the rank, and ``reduce=`` reduces across
the processes through the job's key-value store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

from tests.conftest import load_run

WORKER = textwrap.dedent(
    """
    import sys
    import jax
    port, pid, logdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=2, process_id=pid, initialization_timeout=60
    )
    import jax.numpy as jnp
    from tallyboard_jax import metric_writers
    writer = metric_writers.create_default_writer(logdir, collection="train")
    writer.write_scalars(0, {"loss": jnp.float32(0.5) + pid})
    writer.close()
    print(jax.process_index(), jax.process_count(), writer.writer is not None)
    jax.distributed.shutdown()
    """
)


REDUCING = textwrap.dedent(
    """
    import sys
    import jax
    port, pid, logdir, sync_timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=2, process_id=pid, initialization_timeout=60
    )
    sys.path.insert(0, ".")
    import jax.numpy as jnp
    from tallyboard import SummaryWriter
    from tallyboard.ranks.reduce import RankSyncError
    from tallyboard_jax.metric_writers import MetricWriter
    from tests.jax_support import computing

    if sync_timeout < 10:  # process 1 never syncs: process 0 is told so within the timeout
        if pid == 1:
            jax.distributed.shutdown()
            sys.exit(0)
        writer = MetricWriter(logdir, reduce="mean", sync_timeout=sync_timeout)
        writer.write_scalars(0, {"loss": 1.0})
        try:
            writer.flush()
        except RankSyncError as exc:
            print("refused:", exc)
        sys.exit(0)
    with SummaryWriter(logdir + "/zero") as writer:  # ranks="zero": process 0 writes
        writer.add_scalar("x", float(pid), 0)
    with SummaryWriter(logdir + "/each", ranks="each") as writer:
        writer.add_scalar("x", float(pid), 0)
    writer = MetricWriter(logdir + "/reduced", reduce={"loss": "mean", "n": "sum"})
    for step in range(3):
        (loss,) = computing(jnp.float32((0.5 + pid) * (step + 1)))
        writer.write_scalars(step, {"loss": loss, "n": jnp.float32(pid + 1), "lr": 0.1 + pid})
        print("waited:", loss.is_ready())
    writer.close()
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _job(script: str, *args: str) -> list[str]:
    """Run ``script`` as processes 0 and 1 of a jax job; their outputs."""
    port = _free_port()
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(port), str(pid), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for pid in (0, 1)
    ]
    outs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-2000:]
            outs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return outs


def test_only_process_zero_of_a_multi_host_job_writes_files(tmp_path):
    outs = [out.split() for out in _job(WORKER, str(tmp_path / "run"))]
    assert outs == [["0", "2", "True"], ["1", "2", "False"]]
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 1 and files[0].parent.as_posix() == "run/train", files
    assert [e.value for e in load_run(tmp_path / "run" / "train").Scalars("loss")] == [0.5]


def test_a_jax_jobs_processes_are_its_ranks_and_reduce_across_it(tmp_path):
    outs = _job(REDUCING, str(tmp_path / "run"), "60")
    # device values were reduced without a call waiting for them, on both processes
    assert [o.split("\n")[:3] for o in outs] == [["waited: False"] * 3] * 2, outs
    files = sorted(p.relative_to(tmp_path / "run").parent.as_posix()
                   for p in (tmp_path / "run").rglob("*") if p.is_file())  # fmt: skip
    assert files == ["each/rank_0", "each/rank_1", "reduced", "zero"], files
    assert [e.value for e in load_run(tmp_path / "run" / "zero").Scalars("x")] == [0.0]
    for rank in (0, 1):
        each = load_run(tmp_path / "run" / "each" / f"rank_{rank}")
        assert [e.value for e in each.Scalars("x")] == [float(rank)]
    run = load_run(tmp_path / "run" / "reduced")
    assert [(e.step, e.value) for e in run.Scalars("loss")] == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert [(e.step, e.value) for e in run.Scalars("n")] == [(0, 3.0), (1, 3.0), (2, 3.0)]
    lr = [(e.step, round(e.value, 6)) for e in run.Scalars("lr")]
    assert lr == [(0, 0.1), (1, 0.1), (2, 0.1)]  # not reduced: process 0's own


def test_a_process_that_never_syncs_is_named_within_the_sync_timeout(tmp_path):
    start = time.monotonic()
    first, _ = _job(REDUCING, str(tmp_path / "run"), "2")
    assert "refused: rank 1 of the jax job did not sync within 2 s" in first, first
    assert time.monotonic() - start < 60
