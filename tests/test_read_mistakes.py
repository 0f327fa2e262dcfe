"""``tallyboard.read`` says what went wrong when a kind is mistaken: an unknown kind is refused
with the kinds there are, and a read that finds no value of its kind names the kinds the runs
hold (MindSpore's ``add_value("graph", ...)`` values are kind ``anf_graph``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tallyboard
from tallyboard import SummaryRecord
from tallyboard.warn import ReadWarning


@pytest.fixture
def ms_run(tmp_path: Path) -> Path:
    with SummaryRecord(str(tmp_path / "run")) as record:
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(1)
    return tmp_path


@pytest.mark.parametrize(
    "kind, hint",
    [("scalars", "did you mean 'scalar'"), ("images", "did you mean 'image'"), ("nope", "")],
)
def test_an_unknown_kind_is_refused_with_the_kinds_there_are(
    ms_run: Path, kind: str, hint: str
) -> None:
    with pytest.raises(ValueError, match=rf"unknown kind '{kind}'") as err:
        tallyboard.read(ms_run, kind=kind)
    assert hint in str(err.value)
    assert "the kinds installed plugins give: anf_graph, audio," in str(err.value)


def test_a_kind_with_no_value_there_warns_naming_the_kinds_held(ms_run: Path) -> None:
    with pytest.warns(ReadWarning, match=r"no 'graph' values under .*: scalar \(1 tag\)"):
        df = tallyboard.read(ms_run, kind="graph")  # add_value's name; the kind is anf_graph
    assert df.empty
    assert tallyboard.read(ms_run)["value"].tolist() == [0.5]
