"""A plugin's kind shown in TensorBoard as scalars reads back everywhere (issue 47, items 1, 8).

The ``quantiles`` kind of this module (count, min, p25, p50, p75, p95, max of an array) is
written as one ``simple_value`` per statistic, each carrying the plugin's metadata built with
the public helper ``tallyboard_tfevents.proto.metadata`` (plugin name, content, data class,
description). Such values reach the plugin's decoder (``read(kind="quantiles")``), not the
scalar columns; ``tallyboard board`` shows them as scalars without a warning; ``convert``
rebuilds the payload from its row (``from_row`` returns the payload itself: ``convert`` of the
kind takes only arrays).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tallyboard import Kind, SummaryWriter, convert, hookimpl, read
from tallyboard.board import serve
from tallyboard.plugin.registry import add_plugin, remove_plugin
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

STATS = ("count", "min", "p25", "p50", "p75", "p95", "max")


@dataclass(frozen=True)
class Quantiles:
    """The payload: the statistics of one array, in the order of ``STATS``."""

    values: tuple[float, ...]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(STATS, self.values))


def _convert(value: Any) -> Quantiles:
    arr = np.asarray(value, np.float64).ravel()
    if not arr.size:
        raise ValueError("value must hold at least one number")
    q = np.percentile(arr, [25, 50, 75, 95]).tolist()
    return Quantiles((float(arr.size), float(arr.min()), *q, float(arr.max())))


def _encode(tag: str, step: int | None, wall_time: float, q: Quantiles) -> bytes:
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DATA_CLASS_SCALAR, SummaryValue, metadata

    values = [
        SummaryValue(
            tag=f"{tag}/{stat}",
            simple_value=value,
            metadata=metadata(
                "quantiles",
                stat.encode(),
                data_class=DATA_CLASS_SCALAR,
                description=f"{stat} of {tag}",
            ),
        )
        for stat, value in q.as_dict().items()
    ]
    return summary_event(step, wall_time, values)


def _decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    plugin = value.metadata.plugin_data
    if plugin.plugin_name != "quantiles":
        return None
    stat = plugin.content.decode()
    return {
        "tag": value.tag.removesuffix(f"/{stat}"),
        "statistic": stat,
        "value": value.simple_value,
    }


def _read_table(rows: list[dict[str, Any]], batches: Any) -> list[dict[str, Any]]:
    """One row per run, tag and step with every statistic."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = (row["run"], row["tag"], row["step"])
        got = out.setdefault(key, {"run": key[0], "tag": key[1], "step": key[2]})
        got["wall_time"] = row["wall_time"]
        if "statistic" in row:  # one statistic a value (event files)
            got[row["statistic"]] = row["value"]
        else:  # all of them (JSONL)
            got.update({s: row[s] for s in STATS})
    return list(out.values())


def _from_row(row: dict[str, Any]) -> tuple[str, Quantiles]:
    return row["tag"], Quantiles(tuple(float(row[s]) for s in STATS))


class QuantilesPlugin:
    @hookimpl
    def register_kinds(self, register: Any) -> None:
        register(
            Kind(
                name="quantiles",
                convert=_convert,
                payload=Quantiles,
                read_table=_read_table,
                from_row=_from_row,
            )
        )

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        from tallyboard_jsonl import encoder_for

        register("quantiles", "tfevents", _encode)
        register("quantiles", "jsonl", encoder_for("quantiles", Quantiles.as_dict))

    @hookimpl
    def register_decoders(self, register: Any) -> None:
        register("tfevents", "quantiles", _decode)
        register("jsonl", "quantiles", _decode_jsonl)


def _decode_jsonl(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """One JSONL line of the kind: every statistic in one row."""
    return dict(value) if isinstance(value, dict) and set(value) == set(STATS) else None


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``run``: event files; ``lines``: JSONL (a kind's JSONL form and decoder)."""
    root = tmp_path_factory.mktemp("quantiles")
    add_plugin(QuantilesPlugin(), "quantiles-test")
    try:
        with SummaryWriter(root / "run") as w:
            for step in range(3):
                w.add_value("quantiles", "latency", np.arange(101.0) * (step + 1), step)
                w.add_scalar("loss", 1.0 / (step + 1), step)
        with SummaryWriter(root / "lines", sinks=["jsonl"]) as w:
            w.add_value("quantiles", "latency", np.arange(101.0) / 3, 7)
    finally:
        remove_plugin("quantiles-test")
    yield root


@pytest.fixture
def plugin(logdir: Path) -> Iterator[None]:
    add_plugin(QuantilesPlugin(), "quantiles-test")
    yield
    remove_plugin("quantiles-test")


def test_simple_values_carrying_a_plugins_metadata_reach_its_decoder(
    logdir: Path, plugin: None
) -> None:
    df = read(logdir / "run", kind="quantiles")
    assert df["tag"].tolist() == ["latency"] * 3
    assert df["p50"].tolist() == [50.0, 100.0, 150.0]
    assert df["max"].tolist() == [100.0, 200.0, 300.0] and df["count"].tolist() == [101.0] * 3
    scalars = read(logdir / "run")  # the scalar table holds the plain scalars only
    assert sorted(set(scalars["tag"])) == ["loss"]


def test_without_the_plugin_they_read_as_scalars(logdir: Path) -> None:
    scalars = read(logdir / "run")
    assert sorted(set(scalars["tag"])) == ["latency/" + s for s in sorted(STATS)] + ["loss"]


def test_tensorboard_shows_them_as_scalars_with_the_metadata_set(logdir: Path) -> None:
    acc = event_accumulator.EventAccumulator(str(logdir / "run"))
    acc.Reload()
    assert [e.value for e in acc.Scalars("latency/p95")][0] == 95.0


def test_the_board_shows_them_as_scalars_without_a_warning(
    logdir: Path, plugin: None, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, "tallyboard.board"),
        serve(str(logdir), reload=0) as server,
    ):
        assert server.wait_loaded(60)
        channel = grpc.insecure_channel(server.address)
        stub = pb_grpc.TensorBoardDataProviderStub(channel)
        req = pb.ListScalarsRequest()
        req.plugin_filter.plugin_name = "scalars"
        tags = {t.tag_name: t.metadata for r in stub.ListScalars(req).runs for t in r.tags}
        channel.close()
        problems = list(server.loader.problems)
    assert set(tags) == {f"latency/{s}" for s in STATS} | {"loss"}
    assert tags["latency/p50"].summary_metadata.summary_description == "p50 of latency"
    assert tags["latency/p50"].max_step == 2
    assert not problems
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_convert_rebuilds_the_payload_from_its_row(
    logdir: Path, plugin: None, tmp_path: Path
) -> None:
    want = _convert(np.arange(101.0) / 3)
    summary = convert(logdir / "lines", tmp_path / "events", to="tfevents")
    assert summary.converted == {"quantiles": 1} and not summary.not_converted
    # from_row gave the payload itself: convert, which takes arrays, would have taken the
    # seven statistics for the data
    df = read(tmp_path / "events", kind="quantiles")
    assert [df[s].item() for s in STATS] == [np.float32(v) for v in want.values]
    assert df["step"].tolist() == [7]


def test_event_files_convert_to_event_files_with_the_plugins_metadata(
    logdir: Path, plugin: None, tmp_path: Path
) -> None:
    out = convert(logdir / "run", tmp_path / "events", to="tfevents")
    assert out.converted == {"quantiles": 21, "scalar": 3} and not out.not_converted
    assert read(tmp_path / "events", kind="quantiles")["p25"].tolist() == [25.0, 50.0, 75.0]


def test_the_board_shows_a_jsonl_run_of_the_kind_as_scalars(logdir: Path, plugin: None) -> None:
    with serve(str(logdir / "lines"), reload=0) as server:
        assert server.wait_loaded(60)
        channel = grpc.insecure_channel(server.address)
        stub = pb_grpc.TensorBoardDataProviderStub(channel)
        req = pb.ReadScalarsRequest(downsample=pb.Downsample(num_points=10))
        req.plugin_filter.plugin_name = "scalars"
        got = {t.tag_name: list(t.data.value) for r in stub.ReadScalars(req).runs for t in r.tags}
        channel.close()
        problems = list(server.loader.problems)
    assert not problems
    want = _convert(np.arange(101.0) / 3)
    assert got == {f"latency/{s}": [float(np.float32(v))] for s, v in want.as_dict().items()}


def test_a_kind_payload_must_be_a_type() -> None:
    with pytest.raises(TypeError, match="payload must be a type or a tuple of types"):
        Kind(name="bad", convert=float, payload="Quantiles")  # type: ignore[arg-type]
    kind = Kind(name="ok", convert=_convert, payload=Quantiles)
    q = _convert([1.0, 2.0])
    assert kind.payload_of(q) is q  # a payload is one already: convert is not asked
    assert kind.payload_of([1.0, 2.0]) == q


def test_the_metadata_helper_refuses_what_is_not_metadata() -> None:
    from tallyboard_tfevents.proto import DATA_CLASS_TENSOR, metadata

    meta = metadata("p", b"c", data_class=DATA_CLASS_TENSOR, display_name="d", description="e")
    assert (meta.data_class, meta.display_name, meta.summary_description) == (2, "d", "e")
    with pytest.raises(ValueError, match="data_class must be DATA_CLASS_UNKNOWN"):
        metadata("p", data_class=7)
    with pytest.raises(TypeError, match="data_class must be an int"):
        metadata("p", data_class=True)
    with pytest.raises(TypeError, match="content must be bytes"):
        metadata("p", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description must be a str"):
        metadata("p", description=None)  # type: ignore[arg-type]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
