"""MindSpore's summary operators inside a Cell reach ``tallyboard.SummaryRecord.record()``.

Each scenario runs the same net and inputs through MindSpore 2.10's own ``SummaryRecord`` (``ms``)
and tallyboard's (``tb``; ``tbm`` with ``tensorboard=True``), in PyNative and GRAPH_MODE, in one
MindSpore child (``mindspore_support``); the tests read both files back with the independent
reader (kinds, tags, steps, values) and the TensorBoard mirror with ``EventAccumulator``.
"""

from __future__ import annotations

import csv
import functools
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from conftest import load_run
from mindspore_support import (
    Results,
    comparable,
    error_of,
    note,
    run_scenarios,
    scenario,
    summary_file,
    summary_values,
)

MODES = ["pynative", "graph"]

# -- the MindSpore child ---------------------------------------------------------------------


@functools.cache
def _net(mode: str) -> Any:
    """One net per mode, compiled once (GRAPH_MODE) and shared by the scenarios."""
    import mindspore as ms
    from mindspore import nn, ops

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)

    class Summaries(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.scalar = ops.ScalarSummary()
            self.image = ops.ImageSummary()
            self.tensor = ops.TensorSummary()
            self.histogram = ops.HistogramSummary()

        def construct(self, x: Any, img: Any) -> Any:
            self.scalar("first", x[0])
            self.scalar("mean[:x]", x.mean())  # the tag keeps its own "[:x]"
            self.histogram("weights", x)
            self.tensor("w", x)
            self.image("input", img)
            return x * 2

    return Summaries()


def _inputs(i: int, special: float = 0.0) -> tuple[Any, Any]:
    from mindspore import Tensor

    rng = np.random.default_rng(i)
    x = rng.normal(size=6).astype(np.float32)
    if special:
        x[1] = special
    img = rng.random((2, 3, 4, 5), dtype=np.float32)
    return Tensor(x), Tensor(img)


def _records() -> list[tuple[str, Any, dict[str, Any]]]:
    import mindspore
    import tallyboard

    return [
        ("ms", mindspore.SummaryRecord, {}),
        ("tb", tallyboard.SummaryRecord, {}),
        ("tbm", tallyboard.SummaryRecord, {"tensorboard": True, "sinks": ["csv"]}),
    ]


def _ms_ops_cache_state() -> list[int]:
    from mindspore.ops.operations import debug_ops
    from mindspore.train.summary import summary_record

    return [len(debug_ops.SUMMARY_TENSOR_CACHE), len(summary_record.SUMMARY_TENSOR_CACHE)]


def _steps(out: Path, mode: str) -> None:
    """Operators before the record, in train and eval mode, NaN and inf, a filter, empty steps."""
    from mindspore import Tensor

    net = _net(mode)
    for name, record_class, kwargs in _records():
        net(*_inputs(0))  # before the record: PyNative values stay, graph values are dropped
        with record_class(str(out / name), **kwargs) as record:
            net(*_inputs(1))
            record.add_value("scalar", "pooled", Tensor(np.float32(5)))
            record.record(1)
            net(*_inputs(2, special=math.nan))
            net(*_inputs(3, special=math.inf))  # the later value of each tag wins
            record.record(2)
            record.set_mode("eval")
            net(*_inputs(4, special=-math.inf))
            record.record(3)  # eval: the operators' values wait
            record.set_mode("train")
            record.record(4)  # ... and go out here
            net(*_inputs(5))
            record.record(5, plugin_filter=lambda plugin: plugin == "histogram")  # others lost
            record.record(6)
            for step in range(7, 10):  # several records, one after the other
                net(*_inputs(step))
                record.record(step)
        note(f"{name} left", _ms_ops_cache_state())


@scenario
def operators_pynative(out: Path) -> None:
    _steps(out, "pynative")


@scenario
def operators_graph(out: Path) -> None:
    _steps(out, "graph")


@scenario
def pynative_errors(out: Path) -> None:
    """A bad operator value raises MindSpore's error in record(); the pool stays, the list goes."""
    from mindspore import Tensor, ops

    _net("pynative")  # the mode
    bad = [
        ("", ops.ScalarSummary(), Tensor(np.float32(1))),
        ("x", ops.ScalarSummary(), Tensor(np.array([1, 2], np.float32))),
        ("x", ops.ScalarSummary(), 1.0),
        ("x", ops.ImageSummary(), Tensor(np.zeros((2, 2), np.float32))),
        ("x", ops.TensorSummary(), Tensor(np.float32(1))),
        (3, ops.TensorSummary(), Tensor(np.ones(2, np.float32))),
        ("y", ops.HistogramSummary(), np.ones(3)),
    ]
    for name, record_class, _ in _records()[:2]:
        errors = []
        with record_class(str(out / name)) as record:
            for tag, op, value in bad:
                ops.ScalarSummary()("good", Tensor(np.float32(2)))
                record.add_value("scalar", "pooled", Tensor(np.float32(3)))
                op(tag, value)
                errors.append(error_of(lambda record=record: record.record(1)))
                errors.append(_ms_ops_cache_state())
            record.record(2)
        note(name, errors)


@scenario
def internals(out: Path) -> None:
    """The MindSpore internals tallyboard relies on, as MindSpore has them."""
    import importlib
    import inspect

    from tallyboard.faces import mindspore_operators

    found = []
    for module, name, _ in mindspore_operators.INTERNALS:
        value = getattr(importlib.import_module(module), name, None)
        found.append([module, name, type(value).__name__])
    note("internals", found)
    # ... and those the rest of the face uses, each with a public fallback or a clear failure:
    # the graph of SummaryRecord(network=...), and the Tensor members read instead of asnumpy()
    from mindspore import Tensor
    from mindspore.common.api import _cell_graph_executor

    tensor = Tensor(np.float32(1.5))
    note(
        "face internals",
        [
            callable(getattr(_cell_graph_executor, "get_optimize_graph_proto", None)),
            tensor._item() == 1.5,
            str(tensor._dtype) == "Float32",
            len(tensor.get_bytes()) == 4,
        ],
    )
    from mindspore.train.callback import _callback
    from mindspore.train.summary import summary_record

    # The graph-mode route: MindSpore's C++ calls this, which fills the dict tallyboard drains.
    note("callback", inspect.getsource(_callback.summary_cb_for_save_op))
    before = dict(summary_record.SUMMARY_TENSOR_CACHE)
    _callback.summary_cb_for_save_op([{"name": "probe[:Scalar]", "data": 1}])
    note("callback fills", sorted(set(summary_record.SUMMARY_TENSOR_CACHE) - set(before)))
    summary_record._get_summary_tensor_data()
    note("drained", len(summary_record.SUMMARY_TENSOR_CACHE))


# -- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_scenarios(__file__, tmp_path_factory.mktemp("ms_operators"))


def written(path: Path) -> list[tuple[int, str, str, Any]]:
    """(step, tag, kind, value) of every summary value, in file order; no graph, no lineage."""
    events = msr.read_events(summary_file(path))
    assert events[0].version == "MindSpore.Event:1"
    assert all(e.HasField("summary") for e in events[1:])
    return [(s, t, k, comparable(v, k)) for s, t, k, v in msr.values(summary_file(path))]


@pytest.mark.parametrize("mode", MODES)
def test_operator_values_are_written_as_mindspore_writes_them(runs: Results, mode: str) -> None:
    result = runs[f"operators_{mode}"]
    ms, tb = written(result.path / "ms"), written(result.path / "tb")
    assert [v[:3] for v in tb] == [v[:3] for v in ms]
    assert tb == ms
    assert written(result.path / "tbm") == ms
    tags = {(tag, kind) for _, tag, kind, _ in ms}
    assert tags == {
        ("pooled", "scalar_value"),
        ("first", "scalar_value"),
        ("mean[:x]", "scalar_value"),
        ("weights", "histogram"),
        ("w", "tensor"),
        ("input", "image"),
    }


@pytest.mark.parametrize("mode", MODES)
def test_steps_follow_train_eval_mode_and_the_filter(runs: Results, mode: str) -> None:
    ms = written(runs[f"operators_{mode}"].path / "ms")
    steps: dict[int, list[str]] = {}
    for step, tag, kind, _ in ms:
        steps.setdefault(step, []).append(f"{tag}/{kind}")
    operators = ["first/scalar_value", "mean[:x]/scalar_value", "weights/histogram", "w/tensor"]
    # step 1: PyNative also writes the values cached before the record was opened (the same
    # tags, replaced by the later call); GRAPH_MODE's were dropped when it opened.
    assert sorted(steps[1]) == sorted(["pooled/scalar_value", *operators, "input/image"])
    assert 3 not in steps and 6 not in steps  # eval mode; nothing left
    assert sorted(steps[4]) == sorted([*operators, "input/image"])  # the eval-mode values
    assert steps[5] == ["weights/histogram"]
    assert sorted(steps) == [1, 2, 4, 5, 7, 8, 9]


@pytest.mark.parametrize("mode", MODES)
def test_nan_and_inf_values_from_operators(runs: Results, mode: str) -> None:
    path = runs[f"operators_{mode}"].path
    for name in ("ms", "tb"):
        values = msr.values(summary_file(path / name))
        hist = next(v for s, t, k, v in values if s == 2 and t == "weights")
        assert (hist.nan_count, hist.pos_inf_count) == (0, 1)  # the later call (inf) won
        hist = next(v for s, t, k, v in values if s == 4 and t == "weights")
        assert hist.neg_inf_count == 1


@pytest.mark.parametrize("mode", MODES)
def test_both_caches_are_left_empty(runs: Results, mode: str) -> None:
    notes = runs[f"operators_{mode}"].notes
    assert notes["tb left"] == notes["ms left"] == [0, 0]


# TensorBoard's own histogram compression computes NaN over a histogram whose max is inf (the
# operators' inf values are written as they are); that warning is TensorBoard's reading, not ours.
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("mode", MODES)
def test_the_tensorboard_mirror_holds_the_operator_values(runs: Results, mode: str) -> None:
    path = runs[f"operators_{mode}"].path
    ms = msr.values(summary_file(path / "ms"))
    acc = load_run(path / "tbm")
    for tag in ("first", "mean[:x]", "pooled"):
        expected = [(s, v) for s, t, k, v in ms if t == tag]
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in expected]
        assert np.allclose([v for _, v in got], [v for _, v in expected], equal_nan=True)
    hist_steps = [s for s, t, k, v in ms if t == "weights"]
    assert [e.step for e in acc.Histograms("weights")] == hist_steps
    assert [e.step for e in acc.Images("input")] == [s for s, t, k, v in ms if t == "input"]
    tensors = [(s, v) for s, t, k, v in ms if t == "w"]
    got = acc.Tensors("w")
    assert [e.step for e in got] == [s for s, _ in tensors]
    from tensorboard.util import tensor_util

    for event, (_, proto) in zip(got, tensors):
        assert np.array_equal(
            tensor_util.make_ndarray(event.tensor_proto).ravel(),
            np.array(proto.float_data, np.float32),
            equal_nan=True,
        )


@pytest.mark.parametrize("mode", MODES)
def test_extra_sinks_get_the_operator_scalars(runs: Results, mode: str) -> None:
    path = runs[f"operators_{mode}"].path
    expected = [(s, t, v) for s, t, k, v in summary_values(path / "ms") if k == "scalar_value"]
    with open(path / "tbm" / "scalars.csv", newline="") as f:
        got = [(int(r["step"]), r["tag"], float(r["value"])) for r in csv.DictReader(f)]
    assert [(s, t) for s, t, _ in got] == [(s, t) for s, t, _ in expected]
    assert np.allclose([v for *_, v in got], [v for *_, v in expected], equal_nan=True)


def test_bad_operator_values_raise_mindspores_errors_in_record(runs: Results) -> None:
    notes = runs["pynative_errors"].notes
    assert notes["tb"] == notes["ms"]
    errors = notes["ms"][::2]
    assert [e[0] for e in errors] == ["TypeError", "ValueError", "TypeError", "ValueError"] + [
        "ValueError",
        "TypeError",
        "TypeError",
    ]
    assert (
        errors[1][1]
        == 'For "ScalarSummary", the v rank must be less than or equal to 1, but got 2.'
    )
    assert all(state == [0, 0] for state in notes["ms"][1::2])  # the list is gone either way
    path = runs["pynative_errors"].path
    # the pooled values stayed, all seven, for the next record
    assert written(path / "tb") == written(path / "ms")
    assert [(s, t) for s, t, _, _ in written(path / "tb")] == [(2, "pooled")] * 7


def test_the_mindspore_internals_relied_on_still_exist(runs: Results) -> None:
    notes = runs["internals"].notes
    assert [kind for _, _, kind in notes["internals"]] == ["list", "dict", "function"]
    assert notes["face internals"] == [True, True, True, True]
    assert "_cache_summary_tensor_data" in notes["callback"]
    assert notes["callback fills"] == ["probe[:Scalar]"]
    assert notes["drained"] == 0


# -- without MindSpore in the process ----------------------------------------------------------


def test_tallyboard_never_imports_mindspore(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import tallyboard
        from tallyboard import SummaryRecord, ops
        import tallyboard.ops
        with SummaryRecord({str(tmp_path)!r}, tensorboard=True) as record:
            ops.ScalarSummary()("loss", np.float32(0.5))
            record.add_value("scalar", "acc", np.float32(0.25))
            assert record.record(1)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "mindspore")
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    (path,) = [p for p in tmp_path.iterdir() if p.name.endswith("_MS")]
    assert [(s, t, v) for s, t, _, v in msr.values(path)] == [(1, "acc", 0.25), (1, "loss", 0.5)]


def test_ops_is_importable_where_mindspore_users_look_for_it(logdir: Path) -> None:
    import tallyboard
    import tallyboard.faces.ops
    import tallyboard.ops
    from tallyboard import SummaryRecord, ops

    assert ops is tallyboard.ops
    for name in ("ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary"):
        assert getattr(tallyboard.ops, name) is getattr(tallyboard.faces.ops, name)
    with SummaryRecord(str(logdir)) as record:
        ops.HistogramSummary()("w", np.arange(4.0))
        record.record(3)
    ((step, tag, kind, _),) = msr.values(summary_file(logdir))
    assert (step, tag, kind) == (3, "w", "histogram")
