"""A real TensorBoard server on 127.0.0.1 for integration tests; always stopped by its pid."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exited(proc: Any) -> bool:
    """Whether the ``psutil.Process`` ``proc`` has exited: gone, or a zombie (whose files,
    sockets included, are closed; only its parent's wait is left)."""
    import psutil

    try:
        return bool(proc.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def stop_process_group(proc: subprocess.Popen[Any], timeout: float) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM, then SIGKILL after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


class TensorBoard:
    """Queries against a running server."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def get(self, route: str, **params: Any) -> bytes:
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.base}{route}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.read()

    def get_json(self, route: str, **params: Any) -> Any:
        return json.loads(self.get(route, **params))

    def post_json(self, route: str, body: Any) -> Any:
        req = urllib.request.Request(
            f"{self.base}{route}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def post_form(self, route: str, fields: list[tuple[str, str]]) -> Any:
        req = urllib.request.Request(
            f"{self.base}{route}", data=urllib.parse.urlencode(fields).encode()
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())


@contextlib.contextmanager
def tensorboard_server(
    logdir: str | os.PathLike[str], timeout: float = 90.0
) -> Iterator[TensorBoard]:
    """Start ``tensorboard --logdir`` on a free loopback port, wait until it serves runs."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "tensorboard.main",
        "--logdir",
        str(logdir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--load_fast=false",
        "--reload_interval=0",
        "--reload_task=blocking",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        tb = TensorBoard(port)
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"tensorboard exited with {proc.returncode}: {err[-2000:]}")
            try:
                if tb.get_json("/data/runs"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("tensorboard did not start serving runs in time")
            time.sleep(0.3)
        yield tb
    finally:
        stop_process_group(proc, 10)
        if proc.stderr:
            proc.stderr.close()
