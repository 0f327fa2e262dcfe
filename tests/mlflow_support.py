"""A real ``mlflow server`` on 127.0.0.1 for the tests, startable again on the same port and store;
and MLflow sqlite stores made without running MLflow's migrations again for each test."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from tb_server import exited, free_port, stop_process_group

_template: bytes | None = None
_template_lock = threading.Lock()


def _empty_store() -> bytes:
    """The bytes of an MLflow sqlite store whose migrations have all run, holding nothing (not
    even the ``Default`` experiment, which MLflow adds when it opens a store, with that store's
    own artifact root): made once per process. MLflow runs its ~60 alembic migrations on every
    new sqlite file (seconds each time on two busy cores)."""
    global _template
    with _template_lock:
        if _template is None:
            from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

            with tempfile.TemporaryDirectory(prefix="tallyboard-mlflow-store-") as tmp:
                db = Path(tmp) / "mlflow.db"
                store = SqlAlchemyStore(f"sqlite:///{db}", (Path(tmp) / "artifacts").as_uri())
                store.engine.dispose()
                with contextlib.closing(sqlite3.connect(db)) as con, con:
                    con.execute("DELETE FROM experiments")
                _template = db.read_bytes()
        return _template


def migrated_store(db: Path) -> Path:
    """Write an empty MLflow sqlite store, already migrated, at ``db`` (a new file; its folder is
    made): for a test that needs *a* store there, not one that checks who creates it. MLflow
    opens it as the store it would have made itself."""
    if db.exists():
        raise FileExistsError(f"{db} exists: a store made for a test must be new")
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(_empty_store())
    return db


def local_store(log_dir: Path) -> Path:
    """:func:`migrated_store` where the ``mlflow`` sink of a writer on ``log_dir`` keeps its
    store (``LOG_DIR/mlflow/mlflow.db``)."""
    return migrated_store(log_dir / "mlflow" / "mlflow.db")


class MlflowServer:
    """``mlflow server`` with its sqlite store and artifacts in ``root``; ``kill()`` ends it at once.
    The first start finds an empty store already migrated (:func:`migrated_store`)."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[Any] | None = None

    def start(self, timeout: float = 180.0) -> str:
        if not (self.root / "server.db").exists():
            migrated_store(self.root / "server.db")
        cmd = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{self.root / 'server.db'}",
            "--artifacts-destination",
            str(self.root / "artifacts"),
        ]
        # MLflow's job runner (GenAI jobs, trace rollups) starts eight more Python processes;
        # the tests use none of it, and on two cores it doubles the start and slows all else
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with open(self.root / "server.log", "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"mlflow server exited with {self.proc.returncode}: "
                    + (self.root / "server.log").read_text(errors="replace")[-2000:]
                )
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        return self.url
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("mlflow server did not answer /health in time")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the server's process group; returns once every process of it has exited
        (uvicorn's worker, killed too, can exit after its parent): new connections are refused
        from then on. A connection a client kept alive from before may still be reset on its
        next request, as when any server dies."""
        if self.proc is not None:
            members: list[psutil.Process] = []
            with contextlib.suppress(psutil.NoSuchProcess):
                main = psutil.Process(self.proc.pid)
                members = [main, *main.children(recursive=True)]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            deadline = time.monotonic() + 30
            while not all(map(exited, members)):
                if time.monotonic() > deadline:
                    raise TimeoutError("mlflow server's processes outlived SIGKILL by 30 s")
                time.sleep(0.01)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc, 15)
            self.proc = None


@contextlib.contextmanager
def mlflow_server(root: Path, port: int | None = None) -> Iterator[str]:
    """A running server for the ``with`` block; its URL."""
    server = MlflowServer(root, port)
    try:
        yield server.start()
    finally:
        server.stop()
