"""tallyboard_ray.read on a real Ray runtime (ray.init(num_cpus=2), started once for the module):
read's table row for row, locally and on S3 (moto on 127.0.0.1); a worker killed mid-read, a
damaged record and a stalled store."""

# ruff: noqa: F401, F811 (the fixtures sweep and on_s3 come from engine_support)
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    BAD_ARGUMENTS,
    assert_same_rows,
    corrupt_a_record,
    exports_alike,
    fails_within,
    on_s3,
    sweep,
    write_sweep,
)
from ray_support import ray_runtime
from tallyboard import read
from tallyboard.warn import ReadWarning

ray = pytest.importorskip("ray", reason="the test extra installs ray[data]")
pytest.importorskip("ray.data", reason="the test extra installs ray[data]")
import tallyboard_ray  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def runtime() -> Iterator[None]:
    with ray_runtime(num_cpus=2, logging_level="ERROR", log_to_driver=False):
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True  # blocks in share order: read's rows
        yield


def as_frame(ds: Any) -> Any:
    """The dataset's blocks in order, as one pandas frame (Arrow's conversion)."""
    import pyarrow as pa

    return pa.concat_tables(ray.get(ds.to_arrow_refs())).to_pandas()


def test_the_dataset_is_reads_row_for_row(sweep: Path) -> None:
    ds = tallyboard_ray.read(sweep, partitions=4)
    want = read(sweep, table="arrow")
    assert ds.schema().names == want.schema.names
    assert [str(t) for t in ds.schema().types][2:] == [str(t) for t in want.schema.types][2:]
    assert all(str(t).startswith("dictionary<values=string") for t in ds.schema().types[:2])
    blocks = ray.get(ds.to_arrow_refs())
    assert len(blocks) == 4
    assert_same_rows(as_frame(ds), read(sweep))
    assert ds.count() == want.num_rows


def test_the_selection_is_reads(sweep: Path) -> None:
    got = as_frame(tallyboard_ray.read(sweep, runs="lr[12]/*", tags="acc", partitions=3))
    assert_same_rows(got, read(sweep, runs="lr[12]/*", tags="acc"))
    hist = tallyboard_ray.read(sweep, kind="histogram", partitions=3).to_pandas()
    want = read(sweep, kind="histogram")
    assert hist[["run", "tag", "step", "sum"]].astype({"run": str}).values.tolist() == (
        want[["run", "tag", "step", "sum"]].astype({"run": str}).values.tolist()
    )


def test_on_s3_with_storage_options(on_s3: tuple[str, dict[str, Any], Any]) -> None:
    url, options, _ = on_s3
    assert_same_rows(as_frame(tallyboard_ray.read(url, storage_options=options)), read(url))


def _read_task_pids() -> list[int]:
    """This runtime's Ray workers running a read task now (Ray titles a worker by its task;
    only the raylet started by this module's ``ray.init`` is looked under)."""
    import psutil

    raylet = ray._private.worker._global_node.all_processes["raylet"][0].process.pid
    found = []
    for proc in psutil.Process(raylet).children(recursive=True):
        try:
            line = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if line.startswith("ray::") and "Read" in line:
            found.append(proc.pid)
    return found


def test_a_worker_killed_mid_read_is_retried_to_the_same_dataset(
    on_s3: tuple[str, dict[str, Any], Any],
) -> None:
    import os
    import signal

    url, options, proxy = on_s3
    ds = tallyboard_ray.read(url, storage_options=options, partitions=4, deadline=60)
    got: list[Any] = []
    proxy.running.clear()  # the store stalls: every read task waits in its read
    try:
        reader = threading.Thread(target=lambda: got.append(as_frame(ds)), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not (pids := _read_task_pids()):
            assert time.monotonic() < deadline, "no read task started"
            time.sleep(0.1)
        os.kill(pids[0], signal.SIGKILL)
        time.sleep(0.5)
    finally:
        proxy.running.set()
    reader.join(120)
    assert got, "the read did not finish"
    assert_same_rows(got[0], read(url))


def test_a_damaged_record_is_skipped_as_read_skips_it(tmp_path: Path) -> None:
    root = write_sweep(tmp_path / "sweep", runs=4, steps=20)
    corrupt_a_record(root / "lr1" / "seed0")
    with pytest.warns(ReadWarning):
        want = read(root)
    assert_same_rows(as_frame(tallyboard_ray.read(root, partitions=2)), want)


def test_a_stalled_store_fails_the_read_within_its_deadline(
    on_s3: tuple[str, dict[str, Any], Any],
) -> None:
    url, options, proxy = on_s3
    ds = tallyboard_ray.read(url, storage_options=options, partitions=2, deadline=2)
    fails_within(proxy, ds.materialize, Exception, 60)  # a task's OSError, in Ray's error


def test_export_on_ray_writes_the_files_and_schema_of_an_export_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = exports_alike(tmp_path, "ray", ("scalar", "text"), "lr0/seed0", capsys)
    assert "appended 5 scalars" in said
    assert ray.is_initialized()  # the runtime joined was left running


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_in_the_call(
    sweep: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        tallyboard_ray.read(sweep, **kwargs)
