"""Bad input to SummaryRecord raises what MindSpore raises, with the exact exception type."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tallyboard import SummaryRecord
from tallyboard.faces.ops import HistogramSummary, ImageSummary, ScalarSummary, TensorSummary


@pytest.fixture
def record(logdir: Path) -> Iterator[SummaryRecord]:
    r = SummaryRecord(logdir)
    yield r
    r.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"log_dir": None}, TypeError, "type should be string"),
        ({"log_dir": 32}, TypeError, "type should be string"),
        ({"log_dir": "   "}, ValueError, "non-blank"),
        ({"log_dir": "x" * 1100}, ValueError, "limited in 1024"),
        ({"max_file_size": "1"}, TypeError, "'max_file_size' should be int"),
        ({"max_file_size": 1.5}, TypeError, "'max_file_size' should be int"),
        ({"file_prefix": 1}, TypeError, "should be str"),
        ({"file_suffix": None}, TypeError, "should be str"),
        ({"file_prefix": ""}, ValueError, "is illegal"),
        ({"file_prefix": "-x"}, ValueError, "is illegal"),
        ({"file_prefix": ".x"}, ValueError, "is illegal"),
        ({"file_suffix": "a-b"}, ValueError, "is illegal"),
        ({"file_suffix": "a b"}, ValueError, "is illegal"),
        ({"file_suffix": "é"}, ValueError, "is illegal"),
        ({"raise_exception": 1}, TypeError, "raise_exception"),
        ({"export_options": ["npy"]}, TypeError, "export_options"),
        ({"export_options": {1: "npy"}}, TypeError, "export_option"),
        ({"export_options": {"tensor_format": 1}}, TypeError, "export_format"),
        ({"export_options": {"image_format": "npy"}}, ValueError, "unsupported"),
        ({"export_options": {"tensor_format": "png"}}, ValueError, "unsupported"),
        ({"network": object()}, TypeError, "network"),
        ({"tensorboard": "yes"}, TypeError, "tensorboard"),
    ],
)
def test_constructor_rejects(logdir: Path, kwargs: dict[str, Any], error: type, match: str) -> None:
    kwargs = {"log_dir": str(logdir), **kwargs}
    with pytest.raises(error, match=match):
        SummaryRecord(**kwargs)
    SummaryRecord(logdir).close()  # the instance counter was released


def test_a_network_that_is_not_a_cell_is_refused_with_mindspore_loaded(logdir: Path) -> None:
    """With MindSpore imported, ``network`` must still be a Cell: refused at once, where
    MindSpore's own SummaryRecord would fail only at the first record()."""
    import subprocess
    import sys

    code = (
        "import mindspore, sys\n"
        "from tallyboard import SummaryRecord\n"
        "try:\n"
        f"    SummaryRecord({str(logdir)!r}, network=object())\n"
        "except TypeError as e:\n"
        "    print('refused:', e)\n"
        "SummaryRecord(" + repr(str(logdir)) + ").close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "network" in out.stdout and "Cell" in out.stdout


def test_constructor_accepts_names_and_negative_size(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for prefix, suffix in [("events", "_MS"), ("xx_", "_yy"), ("a.b", "_c1")]:
        SummaryRecord(logdir, file_prefix=prefix, file_suffix=suffix).close()
    record = SummaryRecord(logdir, max_file_size=-1)
    assert record.max_file_size is None and "greater than 0" in caplog.text
    record.close()
    SummaryRecord(logdir, max_file_size=True).close()  # bool passes, as in MindSpore


def test_log_dir_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(NotADirectoryError):
        SummaryRecord(str(target))
    SummaryRecord(tmp_path / "new" / "nested").close()
    assert (tmp_path / "new" / "nested").is_dir()


@pytest.mark.parametrize("plugin", ["foo", "Scalar", "SCALAR", "Landscape", "", None, 1])
def test_unknown_plugin(record: SummaryRecord, plugin: Any) -> None:
    with pytest.raises(ValueError, match='no such "plugin"'):
        record.add_value(plugin, "x", np.ones(1))


@pytest.mark.parametrize("plugin", ["scalar", "image", "tensor", "histogram"])
@pytest.mark.parametrize("name", ["", None, 3, b"x"])
def test_bad_names(record: SummaryRecord, plugin: str, name: Any) -> None:
    with pytest.raises(ValueError, match='parameter "name"'):
        record.add_value(plugin, name, np.ones((1, 3, 2, 2)))


@pytest.mark.parametrize("plugin", ["scalar", "image", "tensor", "histogram"])
@pytest.mark.parametrize(
    "value", [None, "1.0", {"a": 1}, object(), np.array(["a"]), np.array([1 + 2j])]
)
def test_bad_value_types(record: SummaryRecord, plugin: str, value: Any) -> None:
    with pytest.raises(TypeError, match='parameter "value"'):
        record.add_value(plugin, "x", value)


@pytest.mark.parametrize(
    ("plugin", "value", "match"),
    [
        ("scalar", np.ones(2), "rank must be less than or equal to 1"),
        ("scalar", np.ones((2, 2)), "rank must be less than or equal to 1"),
        ("scalar", np.zeros((0,)), "rank must be less than or equal to 1"),
        ("image", np.ones((3, 4, 4)), "not to hold a valid image"),
        ("image", np.ones((1, 1, 3, 4, 4)), "not to hold a valid image"),
        ("tensor", np.float32(1), "should not be empty"),
        ("histogram", np.array(1.0), "should not be empty"),
    ],
)
def test_wrong_ranks(record: SummaryRecord, plugin: str, value: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        record.add_value(plugin, "x", value)


def test_ranks_that_pass(record: SummaryRecord) -> None:
    record.add_value("scalar", "a", np.ones((1, 1)))
    record.add_value("tensor", "b", np.zeros((0,)))
    record.add_value("image", "c", np.ones((1, 4, 2, 2)))  # channels are checked when written


@pytest.mark.parametrize(
    "plugin", ["train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data"]
)
def test_wrong_lineage_types(record: SummaryRecord, plugin: str) -> None:
    from tallyboard.faces.summary_record import LossLandscape, TrainLineage

    wrong = LossLandscape() if plugin == "train_lineage" else TrainLineage()
    expected = {
        "train_lineage": "TrainLineage", "eval_lineage": "EvaluationLineage",
        "dataset_graph": "DatasetGraph", "custom_lineage_data": "UserDefinedInfo",
    }[plugin]  # fmt: skip
    with pytest.raises(TypeError, match=f"Plugin '{plugin}' expects a {expected} value."):
        record.add_value(plugin, "x", wrong)
    with pytest.raises(TypeError):
        record.add_value(plugin, "x", {"lr": 0.1})


def test_wrong_landscape_and_graph(record: SummaryRecord) -> None:
    with pytest.raises(TypeError, match="LossLandscape"):
        record.add_value("landscape", "x", b"bytes")
    with pytest.raises(TypeError, match="ModelProto"):
        record.add_value("graph", "x", "not bytes")
    with pytest.raises(ValueError, match="ModelProto"):
        record.add_value("graph", "x", b"\xff\xff\xff")


@pytest.mark.parametrize("step", ["2", 1.0, True, None, np.int64(1)])
def test_bad_steps(record: SummaryRecord, step: Any) -> None:
    with pytest.raises(TypeError, match="'step' should be 'int'"):
        record.record(step)


def test_step_outside_int64(record: SummaryRecord) -> None:
    with pytest.raises(ValueError, match="int64"):
        record.record(2**63)


def test_bad_train_network_and_mode(record: SummaryRecord) -> None:
    with pytest.raises(TypeError, match="train_network"):
        record.record(1, train_network=object())
    with pytest.raises(ValueError, match="not a recognized mode"):
        record.set_mode("test")
    with pytest.raises(ValueError, match="not a recognized mode"):
        record.set_mode("TRAIN")


def test_bad_input_after_close_still_raises(logdir: Path) -> None:
    record = SummaryRecord(logdir)
    record.close()
    with pytest.raises(TypeError):
        record.record(True)
    with pytest.raises(ValueError):
        record.add_value("nope", "x", np.ones(1))
    with pytest.raises(ValueError):
        record.__enter__()


@pytest.mark.parametrize(
    ("op", "name", "value", "error"),
    [
        (ScalarSummary(), "", np.float32(1), ValueError),
        (ScalarSummary(), 1, np.float32(1), TypeError),
        (ScalarSummary(), "s", "1", TypeError),
        (ScalarSummary(), "s", np.ones(3), ValueError),
        (ImageSummary(), "i", np.ones((3, 2, 2)), ValueError),
        (TensorSummary(), "t", np.float32(1), ValueError),
        (HistogramSummary(), "h", np.array(1.0), ValueError),
        (HistogramSummary(), "h", None, TypeError),
    ],
)
def test_summary_operator_validation(op: Any, name: Any, value: Any, error: type) -> None:
    from tallyboard.faces import ops

    before = ops.pending()
    with pytest.raises(error):
        op(name, value)
    assert ops.pending() == before


def _make_unwritable(logdir: Path) -> None:
    """The log dir replaced by a file: creating the summary file fails, even for root."""
    import shutil

    shutil.rmtree(logdir)
    logdir.write_text("")


def test_unwritable_log_dir_is_logged_and_record_returns_true(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """raise_exception=False: logged, that file's writer stops, record() returns True."""
    r = SummaryRecord(logdir)
    _make_unwritable(logdir)
    r.add_value("scalar", "loss", np.float32(1.0))
    with caplog.at_level("ERROR"):
        assert r.record(1) is True
    assert [rec.levelname for rec in caplog.records] == ["ERROR"]
    assert "Not a directory" in caplog.records[0].getMessage()
    caplog.clear()
    r.add_value("scalar", "loss", np.float32(2.0))
    assert r.record(2) is True  # the stopped writer does not try (nor log) again
    r.flush()
    r.close()
    assert caplog.records == []


def test_unwritable_log_dir_raises_with_raise_exception(logdir: Path) -> None:
    r = SummaryRecord(logdir, raise_exception=True)
    _make_unwritable(logdir)
    r.add_value("scalar", "loss", np.float32(1.0))
    with pytest.raises(NotADirectoryError):
        r.record(1)
    r.close()


def test_unknown_plugin_error_lists_every_name_that_works(record: SummaryRecord) -> None:
    import re

    from tallyboard.plugin.registry import get_registry

    with pytest.raises(ValueError, match="no such \"plugin\" of 'nope'") as info:
        record.add_value("nope", "x", 1)
    listed = {
        n for group in re.findall(r"\[([^\]]*)\]", str(info.value)) for n in group.split(", ")
    }
    assert set(get_registry().kinds) - {"landscape"} <= listed | {"anf_graph"}
    assert {"tensor", "scalar", "graph", "landscape", "text", "audio"} <= listed
    record.add_value("text", "notes", "a plugin kind listed there works")  # no error
