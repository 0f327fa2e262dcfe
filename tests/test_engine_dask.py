"""tallyboard_dask.read on a real Dask cluster (a LocalCluster of two worker processes, started
once for the module): read's frame row for row, locally and on S3 (moto on 127.0.0.1); a worker
killed mid-read, a damaged record and a stalled store."""

# ruff: noqa: F401, F811 (the fixtures sweep and on_s3 come from engine_support)
from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    BAD_ARGUMENTS,
    assert_same_exports,
    assert_same_rows,
    corrupt_a_record,
    exports_alike,
    fails_within,
    on_s3,
    sweep,
    write_sweep,
)
from tallyboard import read
from tallyboard.cli import main
from tallyboard.warn import ReadWarning

dd = pytest.importorskip("dask.dataframe", reason="the test extra installs dask")
distributed = pytest.importorskip("distributed", reason="the test extra installs distributed")
import tallyboard_dask  # noqa: E402
from dask.dataframe.methods import concat  # noqa: E402


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as c:
        yield c


def test_the_frame_is_reads_row_for_row_with_its_dtypes(client: Any, sweep: Path) -> None:
    ddf = tallyboard_dask.read(sweep, partitions=4)
    assert ddf.npartitions == 4
    want = read(sweep)
    assert dict(ddf.dtypes.astype(str)) == dict(want.dtypes.astype(str))
    assert not ddf.run.cat.known  # each partition brings its own categories, as dask's readers
    assert_same_rows(ddf.compute(), want)


def test_by_default_two_partitions_per_worker_thread(client: Any, sweep: Path) -> None:
    assert sum(client.nthreads().values()) == 2
    assert tallyboard_dask.read(sweep).npartitions == 4  # the sweep is far under a blocksize


def test_nothing_selected_is_reads_empty_frame(client: Any, sweep: Path) -> None:
    got = tallyboard_dask.read(sweep, runs="no such run*")
    assert got.npartitions == 1
    assert dict(got.compute().dtypes.astype(str)) == dict(read(sweep, runs="x").dtypes.astype(str))


def test_one_partition_per_share_of_whole_runs(client: Any, sweep: Path) -> None:
    ddf = tallyboard_dask.read(sweep, blocksize=1)  # every run a share of its own
    parts = client.compute(ddf.to_delayed(), sync=True)
    assert [sorted(set(p.run.astype(str))) for p in parts] == [
        [r] for r in sorted(read(sweep).run.unique())
    ]


def test_the_selection_is_reads(client: Any, sweep: Path) -> None:
    got = tallyboard_dask.read(sweep, runs="lr[12]/*", tags=["loss"], partitions=3).compute()
    assert_same_rows(got, read(sweep, runs="lr[12]/*", tags=["loss"]))
    assert set(got.run.astype(str)) == {"lr1/seed0", "lr1/seed1", "lr2/seed0", "lr2/seed1"}
    text = tallyboard_dask.read(sweep, kind="text", partitions=3).compute()
    assert_same_rows(text, read(sweep, kind="text"))


def test_run_index_has_known_divisions(client: Any, sweep: Path) -> None:
    ddf = tallyboard_dask.read(sweep, partitions=3, index="run")
    assert ddf.known_divisions
    assert ddf.divisions[0] == "lr0/seed0" and ddf.divisions[-1] == "lr5/seed1"
    want = read(sweep)
    assert (
        ddf.loc["lr3/seed0"].compute().value.tolist()
        == want[want.run == "lr3/seed0"].value.tolist()
    )


def test_nothing_is_read_until_computed(client: Any, tmp_path: Path) -> None:
    root = write_sweep(tmp_path / "sweep", runs=2, steps=3)
    ddf = tallyboard_dask.read(root, partitions=2)
    for path in root.rglob("*tfevents*"):
        path.write_bytes(b"")  # emptied after the listing: a lazy frame reads them empty
    assert len(ddf.compute()) == 0


def test_on_s3_with_storage_options(client: Any, on_s3: tuple[str, dict[str, Any], Any]) -> None:
    url, options, _ = on_s3
    ddf = tallyboard_dask.read(url, storage_options=options, partitions=3)
    assert_same_rows(ddf.compute(), read(url))


def test_a_worker_killed_mid_read_is_retried_to_the_same_frame(
    client: Any, on_s3: tuple[str, dict[str, Any], Any]
) -> None:
    url, options, proxy = on_s3
    ddf = tallyboard_dask.read(url, storage_options=options, partitions=6, deadline=60)
    pids = client.run(os.getpid)
    proxy.running.clear()  # the store stalls: every task waits in its read
    try:
        futures = client.compute(ddf.to_delayed())
        deadline = time.monotonic() + 30
        while not all(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        busy = [w for w, tasks in client.processing().items() if tasks]
        assert busy, "no worker took a task"
        os.kill(pids[busy[0]], signal.SIGKILL)  # mid-read: its task waits on the store
        time.sleep(0.5)
    finally:
        proxy.running.set()
    assert not distributed.wait(futures, timeout=60).not_done
    assert_same_rows(concat(client.gather(futures)), read(url))
    assert pids[busy[0]] not in client.run(os.getpid).values()  # that worker was replaced


def test_a_damaged_record_is_warned_on_the_client_and_skipped_as_read(
    client: Any, tmp_path: Path
) -> None:
    root = write_sweep(tmp_path / "sweep", runs=4, steps=20)
    corrupt_a_record(root / "lr1" / "seed0")
    with pytest.warns(ReadWarning):
        want = read(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tallyboard_dask.read(root, partitions=2).compute()
        deadline = time.monotonic() + 10  # the warning travels as an event, beside the result
        while not any(issubclass(w.category, ReadWarning) for w in caught):
            assert time.monotonic() < deadline, [str(w.message) for w in caught]
            time.sleep(0.05)
    assert_same_rows(got, want)
    assert any("lr1/seed0" in str(w.message) for w in caught if issubclass(w.category, ReadWarning))


def test_a_stalled_store_fails_the_read_within_its_deadline(
    client: Any, on_s3: tuple[str, dict[str, Any], Any]
) -> None:
    url, options, proxy = on_s3
    ddf = tallyboard_dask.read(url, storage_options=options, partitions=2, deadline=2)
    fails_within(proxy, ddf.compute, OSError, 20)


def test_export_on_dask_writes_the_files_and_schema_of_an_export_here(
    client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on = "dask://" + client.scheduler.address.removeprefix("tcp://")
    said = exports_alike(tmp_path, on, ("scalar", "histogram"), "lr2/seed1", capsys)
    assert "appended 5 scalars" in said


def test_a_worker_killed_mid_export_leaves_the_dataset_an_export_here_writes(
    client: Any, on_s3: tuple[str, dict[str, Any], Any], tmp_path: Path
) -> None:
    url, _, proxy = on_s3  # this process's fsspec reaches the store; the workers' too (env)
    on = "dask://" + client.scheduler.address.removeprefix("tcp://")
    pids = client.run(os.getpid)
    done: list[int] = []
    proxy.running.clear()  # the store stalls: every share waits in its read
    try:
        export = threading.Thread(
            target=lambda: done.append(
                main(["export", url, "--dataset", str(tmp_path / "on"), "--on", on])
            ),
            daemon=True,
        )
        export.start()
        deadline = time.monotonic() + 60
        while not any(client.processing().values()):
            assert time.monotonic() < deadline, "no worker took a share"
            time.sleep(0.05)
        busy = [w for w, tasks in client.processing().items() if tasks]
        os.kill(pids[busy[0]], signal.SIGKILL)
        time.sleep(0.5)
    finally:
        proxy.running.set()
    export.join(120)
    assert done == [0]
    assert main(["export", url, "--dataset", str(tmp_path / "here")]) == 0
    assert_same_exports(tmp_path / "on", tmp_path / "here")
    assert not list((tmp_path / "on").rglob("*.partial"))


def test_export_on_an_engine_not_installed_or_without_dataset_is_refused(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["export", str(sweep), "--dataset", str(tmp_path / "d"), "--on", "spark://h:1"]) == 1
    )
    err = capsys.readouterr().err
    assert "no engine 'spark' is installed" in err and "'dask'" in err and "'ray'" in err
    assert main(["export", str(sweep), "-o", str(tmp_path / "x.csv"), "--on", "dask"]) == 1
    assert "--on works with --dataset only" in capsys.readouterr().err
    assert main(["export", str(sweep), "--dataset", str(tmp_path / "d"), "--on", "dask://"]) == 1
    assert "'dask' or 'dask://HOST:PORT'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [*BAD_ARGUMENTS, ({"index": "tag"}, ValueError, "index must be one of")],
)
def test_bad_arguments_are_refused_in_the_call(
    sweep: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        tallyboard_dask.read(sweep, **kwargs)


def test_a_logdir_that_is_no_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a directory"):
        tallyboard_dask.read(tmp_path / "nothing")
