"""Formats that are not TensorBoard's keep what they carry on the way to the board and back.

A text table (a string tensor of any shape) logged to JSONL, or converted there from event
files, reads back with its shape and is served by ``tallyboard board`` as the string tensor it
was; ``tallyboard.read`` hands on the display names and descriptions event files give their
tags (``DataFrame.attrs["metadata"]``, a pyarrow Table's schema metadata).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from board_support import provider_stub
from tallyboard import SummaryWriter, convert, read
from tensorboard.compat.proto import summary_pb2
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util

TABLE = np.array([["epoch", "acc ✓"], ["1", "0.91"], ["2", "0.93"]])
VECTOR = np.array(["a", "b", "c"])


def _write(root: Path) -> None:
    with SummaryWriter(root / "jsonl", sinks=["jsonl"]) as w:
        w.add_value("text", "table", TABLE, 1)
        w.add_value("text", "vector", VECTOR.tolist(), 1)
        w.add_text("one", "just one", 1)
    with SummaryWriter(root / "events") as w:
        values = [
            summary_pb2.Summary.Value(
                tag="table",
                metadata=text_metadata.create_summary_metadata("", "a table"),
                tensor=tensor_util.make_tensor_proto(TABLE.astype(object)),
            ),
            summary_pb2.Summary.Value(
                tag="loss",
                metadata=scalar_metadata.create_summary_metadata("Loss ✓", "lower is better"),
                tensor=tensor_util.make_tensor_proto(np.float32(0.5)),
            ),
        ]
        w.add_summary(summary_pb2.Summary(value=values), 3)
        w.add_scalar("plain", 1.0, 3)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rows")
    _write(root)
    return root


def test_a_text_table_logged_to_jsonl_reads_back_with_its_shape(root: Path) -> None:
    df = read(root / "jsonl", kind="text").set_index("tag")
    assert df.loc["table", "shape"] == [3, 2]
    assert df.loc["table", "strings"].tolist() == TABLE.tolist()
    assert df.loc["vector", "strings"].tolist() == VECTOR.tolist()
    assert df.loc["one", "value"] == "just one"


def test_event_file_tables_convert_to_jsonl_and_back(root: Path, tmp_path: Path) -> None:
    summary = convert(root / "events", tmp_path / "out", to="jsonl")
    assert summary.converted["text"] == 1 and "text" not in summary.not_converted
    [row] = read(tmp_path / "out", kind="text").to_dict("records")
    assert row["tag"] == "table" and row["strings"].tolist() == TABLE.tolist()


def test_a_text_that_is_not_strings_is_refused_naming_the_value(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path, sinks=["jsonl"]) as w:
        with pytest.raises(TypeError, match="value must be a str or an array of str"):
            w.add_value("text", "t", [1, 2], 0)
        with pytest.raises(TypeError, match="value must be a str"):
            w.add_value("text", "t", np.zeros(2), 0)
        w.add_value("text", "t", "kept", 0)
    assert read(tmp_path, kind="text")["value"].tolist() == ["kept"]


@pytest.fixture(scope="module")
def stub(root: Path) -> Iterator[Any]:
    with provider_stub(root) as stub:
        yield stub


def _text(stub: Any, run: str, tag: str) -> Any:
    req = pb.ReadTensorsRequest(downsample=pb.Downsample(num_points=10))
    req.plugin_filter.plugin_name = "text"
    req.run_tag_filter.runs.names.append(run)
    req.run_tag_filter.tags.names.append(tag)
    [r] = stub.ReadTensors(req).runs
    [t] = r.tags
    return np.vectorize(lambda b: b.decode())(tensor_util.make_ndarray(t.data.value[0]))


def test_the_board_serves_a_jsonl_table_as_the_string_tensor_it_was(stub: Any) -> None:
    got = _text(stub, "jsonl", "table/text_summary")
    assert got.shape == (3, 2) and got.tolist() == TABLE.tolist()
    assert _text(stub, "jsonl", "vector/text_summary").tolist() == VECTOR.tolist()
    assert _text(stub, "events", "table").tolist() == TABLE.tolist()


def test_read_hands_on_display_names_and_descriptions(root: Path) -> None:
    df = read(root / "events")
    assert df.attrs["metadata"] == [
        {"run": ".", "tag": "loss", "display_name": "Loss ✓", "description": "lower is better"}
    ]
    arrow = read(root / "events", table="arrow")
    meta = json.loads(arrow.schema.metadata[b"tallyboard.metadata"])
    assert meta == df.attrs["metadata"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        texts = read(root / "events", kind="text")
    assert texts.attrs["metadata"][0]["description"] == "a table"
    assert "metadata" not in read(root / "jsonl", kind="text").attrs  # JSONL holds none
