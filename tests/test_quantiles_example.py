"""The third example distribution, examples/tallyboard-quantiles: a kind shown in TensorBoard as
scalars and read back, and a network sink that does not send JSON (InfluxDB's line protocol)
with url, token, batch and timeout settings, each in under 60 lines of code. It is
pip-installed and found by its entry point, and used through SummaryWriter, SummaryRecord,
``read``, ``convert``, ``sync`` and the command line, against a real HTTP server and a real
TensorBoard."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from conftest import load_run
from installed_examples import installed_example
from tallyboard import SummaryRecord, SummaryWriter, convert, read
from tallyboard.cli import main as cli_main
from tallyboard.plugin.registry import get_registry
from tallyboard.warn import SinkWarning
from tb_server import tensorboard_server
from test_webhook_example import code_lines

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tallyboard-quantiles"
PACKAGE = EXAMPLE / "tallyboard_quantiles"
DIST = "tallyboard-quantiles"
STATS = ["count", "min", "p25", "p50", "p75", "p95", "max"]
pytest_plugins = ["tallyboard.testing"]

if TYPE_CHECKING:  # imported by pytest_plugins, not before it (assertion rewriting)
    from tallyboard.testing import IngestServer


def test_the_kind_and_the_sink_are_each_under_60_lines_of_code() -> None:
    for module, must in (("kind", "Kind("), ("influx", "class InfluxSink(NetworkSink)")):
        source = (PACKAGE / f"{module}.py").read_text()
        lines = code_lines(source)
        print(f"examples/tallyboard-quantiles {module}.py: {lines} lines of code")
        assert lines < 60 and must in source, (module, lines)
    assert code_lines((PACKAGE / "__init__.py").read_text()) < 25  # the hooks


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example pip-installed for this module (see :func:`installed_example`)."""
    with installed_example(EXAMPLE, tmp_path_factory.mktemp("quantiles"), PACKAGE.name) as site:
        yield site


@pytest.fixture
def server(ingest_server: IngestServer) -> IngestServer:
    return ingest_server


def _base(server: IngestServer) -> str:
    return server.url.removesuffix("/ingest")


def test_the_installed_example_is_found_listed_and_its_method_is_the_writer_s(
    installed: Path,
) -> None:
    info = next(p for p in get_registry().plugins if p.name == "quantiles")
    assert (info.distribution, info.status, info.kinds, info.sinks) == (
        DIST,
        "loaded",
        ["quantiles"],
        ["influx"],
    )
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "plugins"], capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    i = out.index("quantiles  (tallyboard-quantiles 0.1.0)  [loaded]")
    assert out[i + 1 : i + 4] == [
        "    kinds: quantiles",
        "    sinks: influx",
        "    encoders: quantiles->tfevents, quantiles->influx, scalar->influx",
    ]
    import tallyboard_quantiles.kind

    assert SummaryWriter.add_quantiles is tallyboard_quantiles.kind.add_quantiles


def test_quantiles_are_scalars_in_tensorboard_and_read_back_as_one_row(
    installed: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    with SummaryWriter(run) as w:
        for step in range(3):
            w.add_quantiles("latency", np.arange(101.0) * (step + 1), step)
        w.add_scalar("loss", 0.5, 0)
        with pytest.raises(ValueError, match="values must hold finite numbers only"):
            w.add_quantiles("latency", [1.0, float("nan")], 4)
        with pytest.raises(TypeError, match="^values must be numeric array-like, got str"):
            w.add_quantiles("latency", "1 2 3", 4)
    acc = load_run(run)
    assert sorted(acc.Tags()["scalars"]) == sorted(["loss", *(f"latency/{s}" for s in STATS)])
    assert [(e.step, e.value) for e in acc.Scalars("latency/p95")] == [(0, 95), (1, 190), (2, 285)]
    with tensorboard_server(run) as tb:  # TensorBoard itself draws them as scalar charts
        tags = tb.get_json("/data/plugin/scalars/tags")["."]
        points = tb.get_json("/data/plugin/scalars/scalars", run=".", tag="latency/max")
    assert set(tags) == {"loss", *(f"latency/{s}" for s in STATS)}
    assert [(step, value) for _, step, value in points] == [(0, 100), (1, 200), (2, 300)]

    table = read(str(run), kind="quantiles")
    assert table[["tag", "step", *STATS]].values.tolist() == [
        ["latency", step, 101, 0, 25 * k, 50 * k, 75 * k, 95 * k, 100 * k]
        for step, k in ((0, 1), (1, 2), (2, 3))
    ]
    assert list(read(str(run))["tag"]) == ["loss"]  # the statistics are not plain scalars

    convert(str(run), str(tmp_path / "copy"), to="tfevents")  # rebuilt through from_row
    assert read(str(tmp_path / "copy"), kind="quantiles")[STATS].values.tolist() == (
        table[STATS].values.tolist()
    )


def test_points_reach_influx_in_batches_with_token_bucket_and_no_nan(
    installed: Path, server: IngestServer, tmp_path: Path
) -> None:
    settings = {"url": _base(server), "token": "t0k", "org": "lab", "bucket": "train"}
    entry = ("influx", {**settings, "batch_size": 2, "timeout": 2.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SummaryWriter(tmp_path / "a b", sinks=[entry]) as w:
            w.add_quantiles("lat,ms", [0, 10, 20, 30, 40], 1, walltime=1.5)
            w.add_scalar("loss", 0.25, 1, walltime=1.5)
            w.add_scalar("loss", float("nan"), 2, walltime=2.5)  # left out: no NaN in the protocol
            w.add_scalar("loss", 0.125, 3, walltime=3.5)
    said = [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]
    assert said == ["influx sink: 'loss' has values line protocol cannot hold (value): left out"]
    assert server.lines() == [
        r"lat\,ms,run=. count=5.0,min=0.0,p25=10.0,p50=20.0,p75=30.0,p95=38.0,max=40.0,step=1i "
        "1500000000",
        "loss,run=. value=0.25,step=1i 1500000000",
        "loss,run=. value=0.125,step=3i 3500000000",
    ]
    assert len(server.bodies) == 2  # batch_size 2: two values, then the last one at close
    assert set(server.paths) == {"/api/v2/write?org=lab&bucket=train&precision=ns"}
    assert {h["Authorization"] for h in server.headers} == {"Token t0k"}
    assert server.received == []  # nothing of it is JSON


def test_a_refusal_is_raised_and_a_bad_entry_is_said_when_the_writer_is_made(
    installed: Path, server: IngestServer, tmp_path: Path
) -> None:
    server.statuses = [401]
    w = SummaryWriter(tmp_path, sinks=[("influx", {"url": _base(server), "token": "wrong"})])
    w.add_scalar("loss", 1.0, 0)
    with pytest.raises(OSError, match="influx sink failed to send to http://127.0.0.1:.*401"):
        w.flush()
    w.close()
    with pytest.raises(ValueError, match="give the influx sink a URL"):
        SummaryWriter(tmp_path, sinks=["influx"])
    with pytest.raises(ValueError, match="sink 'influx' has no setting 'tokn'; its settings: "):
        SummaryWriter(tmp_path, sinks=[("influx", {"tokn": "x"})])


def test_summary_record_and_sync_send_to_influx_with_the_same_settings(
    installed: Path, server: IngestServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = (f"influx+{_base(server)}", {"token": "from-record", "bucket": "ms"})
    with warnings.catch_warnings(), SummaryRecord(tmp_path / "ms", sinks=[entry]) as record:
        warnings.simplefilter("error", SinkWarning)  # influx takes quantiles: no warning
        record.add_value("quantiles", "lat", [1.0, 3.0])
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(2)
    logdir = tmp_path / "runs"
    with SummaryWriter(logdir / "exp") as w:
        w.add_scalar("loss", 1.5, 1)
    argv = ["sync", str(logdir), "--to", f"influx+{_base(server)}", "-s", "token=from-cli"]
    assert cli_main(argv) == 0
    assert capsys.readouterr().out.startswith("sent 1 new values (scalar 1) of 1 run")
    tokens = [h["Authorization"] for h in server.headers]
    assert tokens[0] == "Token from-record" and tokens[-1] == "Token from-cli"
    lines = [line.rsplit(" ", 1)[0] for line in server.lines()]
    assert lines == [
        "lat,run=. count=2.0,min=1.0,p25=1.5,p50=2.0,p75=2.5,p95=2.9,max=3.0,step=2i",
        "loss,run=. value=0.5,step=2i",
        "loss,run=exp value=1.5,step=1i",
    ]
