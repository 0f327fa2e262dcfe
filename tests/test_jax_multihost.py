"""CLU's multi-host rule with real jax processes: two CPU processes joined by
``jax.distributed`` on 127.0.0.1; only the one whose ``jax.process_index()`` is 0 writes files."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_only_process_zero_of_a_multi_host_job_writes_files(tmp_path):
    port = _free_port()
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(port), str(pid), str(tmp_path / "run")],
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
            outs.append(out.split())
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert outs == [["0", "2", "True"], ["1", "2", "False"]]
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 1 and files[0].parent.as_posix() == "run/train", files
    assert [e.value for e in load_run(tmp_path / "run" / "train").Scalars("loss")] == [0.5]
