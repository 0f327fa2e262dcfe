"""What the engine tests share: a small sweep written by tallyboard, the same sweep on moto's
S3 (on 127.0.0.1, behind a proxy that can stall), and frames compared row for row."""

from __future__ import annotations

import contextlib
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tallyboard import SummaryWriter
from tcp_proxy import s3fs_through
from test_remote_deadline import PausableProxy

BUCKET = "tallyboard-engines"


def write_sweep(root: Path, runs: int = 12, steps: int = 40) -> Path:
    """``runs`` runs ``lr<i>/seed<j>`` of ``steps`` steps (loss, acc; a histogram and a text
    every 10 steps), each of its own length so the shares differ in bytes."""
    for i in range(runs):
        with SummaryWriter(root / f"lr{i // 2}" / f"seed{i % 2}") as w:
            for step in range(steps + 5 * i):
                w.add_scalar("loss", 1.0 / (step + 1) + i, step, walltime=1.7e9 + step)
                w.add_scalar("acc", step * 0.01 * (i + 1), step, walltime=1.7e9 + step)
                if step % 10 == 0:
                    w.add_histogram("weights", [float(step + k) for k in range(8)], step)
                    w.add_text("note", f"run {i} step {step}", step)
    return root


#: arguments both engines' read refuse in the call: ``(kwargs, error, message)``.
BAD_ARGUMENTS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"partitions": 0}, ValueError, "partitions must be None or an int >= 1"),
    ({"blocksize": -1}, ValueError, "blocksize must be None or an int >= 1"),
    ({"storage_options": "key=x"}, TypeError, "storage_options must be None or a dict"),
    ({"tags": 3}, TypeError, "tags must be None, a str or an iterable of str"),
    ({"kind": 3}, TypeError, "kind must be a str"),
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A module's sweep (:func:`write_sweep`), written once."""
    return write_sweep(tmp_path_factory.mktemp("engine") / "sweep")


@pytest.fixture(scope="module")
def on_s3(sweep: Path) -> Iterator[tuple[str, dict[str, Any], ReadStallProxy]]:
    """The module's sweep on moto's S3 (:func:`s3_sweep`), for the module."""
    with pytest.MonkeyPatch.context() as mp, s3_sweep(sweep, mp) as found:
        yield found


def corrupt_a_record(run_dir: Path) -> None:
    """Flip a byte in the data of the middle record of the run's event file (its CRC then
    fails)."""
    (path,) = run_dir.glob("*tfevents*")
    data = bytearray(path.read_bytes())
    starts, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        starts.append((pos, length))
        pos += 12 + length + 4
    at, length = starts[len(starts) // 2]
    data[at + 12 + length // 2] ^= 0xFF
    path.write_bytes(bytes(data))


class ReadStallProxy(PausableProxy):
    """While paused it holds the requests for objects' bytes (a store whose reads stall), and
    lets listings through."""

    def seen(self, data: bytes, outgoing: bool) -> None:
        if outgoing and data.startswith(f"GET /{BUCKET}".encode()):
            path = data.split(b" ", 2)[1].split(b"?", 1)[0]
            if path.strip(b"/").count(b"/"):  # /bucket/key: an object's bytes
                self.running.wait()


@contextlib.contextmanager
def s3_sweep(
    local: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, dict[str, Any], ReadStallProxy]]:
    """moto's S3 on 127.0.0.1 behind a proxy that can stall its reads, holding a copy of the sweep at
    ``local``: its URL, the storage options a worker reaches it with, and the proxy (this
    process's fsspec is configured too, for ``tallyboard.read``)."""
    bucket = f"{BUCKET}-{uuid.uuid4().hex[:12]}"  # moto's buckets outlive its server
    with s3fs_through(ReadStallProxy, monkeypatch, bucket) as (fs, proxy):
        fs.put(str(local), f"{bucket}/sweep", recursive=True)
        options = {
            "endpoint_url": f"http://127.0.0.1:{proxy.port}",
            "key": "testing",
            "secret": "testing",
        }
        yield f"s3://{bucket}/sweep", options, proxy


def assert_same_rows(got: Any, want: Any) -> None:
    """Equal row for row and column for column: numeric dtypes the same, categorical columns
    categorical (an engine's partitions each bring their own categories, compared as the values
    they give), text columns compared as text (an engine may hold it as its string dtype)."""
    import pandas as pd

    got = got.reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    for name in want.columns:
        dtype = want[name].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            assert isinstance(got[name].dtype, pd.CategoricalDtype), name
        elif pd.api.types.is_numeric_dtype(dtype):
            assert got[name].dtype == dtype, (name, got[name].dtype, dtype)
        if not pd.api.types.is_numeric_dtype(dtype):
            got[name] = got[name].astype(object)
            want = want.assign(**{name: want[name].astype(object)})
    pd.testing.assert_frame_equal(got, want)


def dataset_of(out: Path) -> tuple[Any, list[str], Any]:
    """A dataset ``tallyboard export --dataset`` wrote: its schema, its partition folders and
    its rows sorted (as pandas, partition columns as text)."""
    import pyarrow.dataset as ds

    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    folders = sorted(str(p.parent.relative_to(out)) for p in out.rglob("*.parquet"))
    frame = table.to_pandas().astype({"run": str, "kind": str})
    keys = [c for c in ("run", "kind", "tag", "step", "wall_time") if c in frame.columns]
    return table.schema, sorted(set(folders)), frame.sort_values(keys).reset_index(drop=True)


def assert_same_exports(on_engine: Path, here: Path) -> None:
    """Two exports of the same log dir hold the same partitions, schema and rows."""
    import pandas as pd

    schema, folders, rows = dataset_of(on_engine)
    want_schema, want_folders, want_rows = dataset_of(here)
    assert schema == want_schema
    assert folders == want_folders
    pd.testing.assert_frame_equal(rows, want_rows)


def grow(run_dir: Path, steps: int = 5) -> None:
    """Append ``steps`` more loss values to a run (a new event file in its folder)."""
    with SummaryWriter(run_dir) as w:
        for step in range(1000, 1000 + steps):
            w.add_scalar("loss", float(step), step, walltime=1.8e9 + step)


def fails_within(
    proxy: ReadStallProxy, read: Callable[[], Any], error: type[BaseException], seconds: float
) -> None:
    """``read()`` (set up with ``deadline=2``) raises ``error`` naming that deadline while the
    store stalls its reads, and within ``seconds``: no task hangs."""
    proxy.running.clear()
    started = time.monotonic()
    try:
        with pytest.raises(error, match="within 2"):
            read()
    finally:
        proxy.running.set()
    assert time.monotonic() - started < seconds


def exports_alike(tmp_path: Path, on: str, kinds: tuple[str, ...], grown: str, capsys: Any) -> str:
    """``export --dataset`` of a small sweep ``--on`` an engine and here, per kind, then again
    after the run ``grown`` grew: the same partitions, schema and rows each time. Returns
    what the engine's last export said on stderr."""
    from tallyboard.cli import main

    root = write_sweep(tmp_path / "sweep", runs=6, steps=20)

    def both(kind: str) -> str:
        there, here = tmp_path / f"on-{kind}", tmp_path / f"here-{kind}"
        assert main(["export", str(root), "--dataset", str(there), "--kind", kind, "--on", on]) == 0
        said = capsys.readouterr().err
        assert main(["export", str(root), "--dataset", str(here), "--kind", kind]) == 0
        assert_same_exports(there, here)
        return said

    for kind in kinds:
        both(kind)
    grow(root / grown)  # the next export appends only what is new
    return both("scalar")
