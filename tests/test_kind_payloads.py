"""A kind's facts live once: its row fields, the dtype table, the name of the scalar kind.

The histogram's fields (statistics, ``bucket_limit``, ``bucket``) are declared by the histogram
plugin and used as they are by the tfevents decoder, the JSONL line and its decoder; the numpy
to ``TensorProto`` dtype table is one table, read and written by the tfevents plugin's tensor
helpers and equal to TensorBoard's; and core names the scalar kind in one place, the reader
contract whose columns hold it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tallyboard import SummaryWriter, read
from tallyboard.plugin.readers import SCALAR_KIND
from tallyboard_histogram.compute import ROW_FIELDS, from_row, histogram_of
from tallyboard_tfevents.tensors import DTYPES, from_ndarray, to_ndarray
from tensorboard.util import tensor_util

CORE = Path(__file__).parent.parent / "core" / "tallyboard"


def test_a_jsonl_histogram_line_holds_the_kinds_own_fields(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path, sinks=["jsonl"]) as w:
        w.add_histogram("h", np.array([0.1, 1 / 3, 2.0]), 0)
    [line] = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert list(line["value"]) == list(ROW_FIELDS)
    row = read(tmp_path, kind="histogram").iloc[0]
    assert row["min"] == 0.1 and row["num"] == 3.0
    h = histogram_of(np.array([0.1, 1 / 3, 2.0]))
    assert row["bucket_limit"] == h.bucket_limits.tolist()
    assert from_row(h.to_row()).to_row() == h.to_row()


def test_a_jsonl_line_written_with_the_old_names_reads_the_same(tmp_path: Path) -> None:
    old = {
        "min": 0.0,
        "max": 2.0,
        "num": 3.0,
        "sum": 3.0,
        "sum_squares": 5.0,
        "bucket_limits": [1.0, 2.0],
        "bucket_counts": [1.0, 2.0],
    }
    line = {"wall_time": 1.0, "step": 4, "tag": "h", "kind": "histogram", "value": old}
    (tmp_path / "records.jsonl").write_text(json.dumps(line) + "\n")
    row = read(tmp_path, kind="histogram").iloc[0]
    assert (row["bucket_limit"], row["bucket"], row["sum_squares"]) == ([1.0, 2.0], [1.0, 2.0], 5.0)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_the_dtype_table_is_tensorboards_and_round_trips(name: str) -> None:
    arr = (np.arange(6) % 2).astype(name).reshape(2, 3)
    proto = from_ndarray(arr)
    assert proto.dtype == tensor_util.make_tensor_proto(arr).dtype == DTYPES[name]
    back = to_ndarray(proto)
    assert back is not None and back.dtype == arr.dtype and back.tolist() == arr.tolist()


def test_strings_are_utf8_in_string_val() -> None:
    proto = from_ndarray(np.array([["é", "b"]]))
    assert list(proto.string_val) == ["é".encode(), b"b"]
    assert to_ndarray(proto).tolist() == [["é".encode(), b"b"]]


def test_core_names_the_scalar_kind_only_in_the_reader_contract() -> None:
    assignment = re.compile(r"^\w+\s*=\s*\"scalar\"\s*$", re.M)
    places = [
        str(path.relative_to(CORE))
        for path in sorted(CORE.rglob("*.py"))
        if assignment.search(path.read_text(encoding="utf-8"))
    ]
    assert places == ["plugin/readers.py"]
    assert SCALAR_KIND == "scalar"
