"""Every argument of every built-in ``add_*`` method is checked in the call (issue 19).

For each method a kind plugin registers, each parameter in turn gets hostile values (NaN and
infinities, integers past int64 and uint32, negative and huge sizes, wrong types, strings with a
lone surrogate) while the others keep a valid baseline. The call must either raise TypeError or
ValueError naming that parameter, or succeed; after it, ``flush()`` must succeed (nothing the call
accepted may fail later on the writer thread), and at the end every event file must read back
with TensorBoard's own reader, holding every sentinel scalar logged between the cases.
"""

from __future__ import annotations

import inspect
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import plugin_methods
import pytest
from conftest import raw_events
from mindspore_reader import values
from tallyboard import SummaryRecord, SummaryWriter
from tallyboard.plugin.registry import get_registry


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(0.5, 0.5), dpi=20)
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def _linear() -> Any:
    import torch

    return torch.nn.Linear(2, 1)


def _zeros2() -> Any:
    import torch

    return torch.zeros(1, 2)


def _event() -> Any:
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event(file_version="brain.Event:2")


def _summary() -> Any:
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="raw", simple_value=1.0)])


#: A valid call of each built-in method: parameter -> value, or a factory for a fresh value.
BASELINES: dict[str, dict[str, Any]] = {
    "add_scalar": {"tag": "s", "scalar_value": 1.5, "global_step": 1, "walltime": 1e9},
    "add_scalars": {"main_tag": "m", "tag_scalar_dict": {"a": 1.0}, "global_step": 1},
    "add_text": {"tag": "t", "text_string": "hello", "global_step": 1},
    "add_tensor": {"tag": "x", "tensor": np.arange(3.0), "global_step": 1},
    "add_audio": {
        "tag": "a",
        "snd_tensor": np.zeros(16),
        "global_step": 1,
        "sample_rate": 8000,
    },
    "add_image": {"tag": "i", "img_tensor": np.zeros((3, 4, 4)), "dataformats": "CHW"},
    "add_images": {"tag": "i", "img_tensor": np.zeros((2, 3, 4, 4)), "dataformats": "NCHW"},
    "add_image_with_boxes": {
        "tag": "b",
        "img_tensor": np.zeros((3, 8, 8)),
        "box_tensor": np.array([[0.0, 0.0, 2.0, 2.0]]),
        "rescale": 1,
        "labels": ["box"],
    },
    "add_figure": {"tag": "f", "figure": _figure, "close": True},
    "add_video": {"tag": "v", "vid_tensor": np.zeros((1, 2, 3, 4, 4)), "fps": 4},
    "add_histogram": {"tag": "h", "values": np.arange(10.0), "bins": "tensorflow"},
    "add_histogram_raw": {
        "tag": "hr",
        "min": 0.0,
        "max": 2.0,
        "num": 3,
        "sum": 3.0,
        "sum_squares": 5.0,
        "bucket_limits": [1.0, 2.0],
        "bucket_counts": [1, 2],
    },
    "add_pr_curve": {
        "tag": "p",
        "labels": np.array([0, 1, 1]),
        "predictions": np.array([0.1, 0.6, 0.9]),
        "num_thresholds": 5,
    },
    "add_pr_curve_raw": {
        "tag": "pr",
        "true_positive_counts": [2.0, 1.0],
        "false_positive_counts": [1.0, 0.0],
        "true_negative_counts": [0.0, 1.0],
        "false_negative_counts": [0.0, 1.0],
        "precision": [0.66, 1.0],
        "recall": [1.0, 0.5],
        "num_thresholds": 2,
    },
    "add_mesh": {
        "tag": "mesh",
        "vertices": np.zeros((1, 3, 3)),
        "colors": np.zeros((1, 3, 3)),
        "faces": np.array([[[0, 1, 2]]]),
        "config_dict": {"camera": {"fov": 75}},
    },
    "add_hparams": {
        "hparam_dict": {"lr": 0.1, "opt": "sgd"},
        "metric_dict": {"loss": 1.0},
        "hparam_domain_discrete": {"opt": ["sgd", "adam"]},
        "run_name": "trial",
    },
    "add_custom_scalars": {"layout": {"cat": {"chart": ["Multiline", ["s"]]}}},
    "add_custom_scalars_multilinechart": {"tags": ["s"], "category": "c", "title": "t"},
    "add_custom_scalars_marginchart": {"tags": ["a", "b", "c"], "category": "c", "title": "t"},
    "add_embedding": {
        "mat": np.eye(3),
        "metadata": ["a", "b", "c"],
        "label_img": np.zeros((3, 1, 2, 2)),
        "global_step": 0,
        "tag": "emb",
    },
    "add_graph": {"model": _linear, "input_to_model": _zeros2},
    "add_event": {"event": _event, "step": 1},
    "add_summary": {"summary": _summary, "global_step": 1},
    # a Keras model's JSON config, which add_keras_model takes as well as the model
    "add_keras_model": {"model": '{"class_name": "Sequential", "config": {}}', "tag": "keras"},
}
#: Methods that need a library the test machine may lack, and that library.
NEEDS = {"add_onnx_graph": "onnx"}

BIG = [2**31, 2**32, 2**63, 2**64, -(2**63) - 1, 10**30]
BAD_VALUES: list[Any] = [
    None,
    True,
    "x",
    "bad\ud800",
    b"\xff",
    math.nan,
    math.inf,
    -math.inf,
    -1,
    0,
    *BIG,
    1e300,
    1e-300,
    -1e-9,
    [],
    {},
    {"bad\ud800": 1.0},
    ["bad\ud800"],
    object(),
    np.array([math.nan]),
    np.array(["bad\ud800"]),
    np.zeros((0,)),
    np.uint64(2**64 - 1),
]


def builtin_methods() -> list[str]:
    return sorted(plugin_methods.builtin_methods())


def test_every_builtin_method_has_a_baseline() -> None:
    """A new method without a baseline here fails, so the walk keeps covering every method."""
    missing = [m for m in builtin_methods() if m not in BASELINES and m not in NEEDS]
    assert missing == []


def _value(v: Any) -> Any:
    return v() if callable(v) and getattr(v, "__name__", "").startswith("_") else v


def _params(fn: Callable[..., Any]) -> list[str]:
    names = list(inspect.signature(fn).parameters)
    assert names[0] == "writer"
    return names[1:]


def _names_argument(exc: BaseException, param: str) -> bool:
    return param in str(exc)


@pytest.mark.parametrize("method", sorted(BASELINES))
def test_every_argument_is_checked_in_the_call(tmp_path: Path, method: str) -> None:
    registry = get_registry()
    if method not in registry.methods:
        pytest.fail(f"{method} is not registered")
    fn = registry.methods[method][1]
    baseline = BASELINES[method]
    params = _params(fn)
    assert set(baseline) <= set(params), f"baseline of {method} names unknown parameters"
    log_dir = tmp_path / "run"
    writer = SummaryWriter(str(log_dir))
    sentinel = 0
    problems: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the baseline itself must work
        getattr(writer, method)(**{k: _value(v) for k, v in baseline.items()})
        writer.flush()
        for param in params:
            for bad in BAD_VALUES:
                kwargs = {k: _value(v) for k, v in baseline.items()}
                kwargs[param] = bad
                try:
                    getattr(writer, method)(**kwargs)
                except (TypeError, ValueError) as exc:
                    if not _names_argument(exc, param):
                        problems.append(
                            f"{param}={bad!r}: {type(exc).__name__} does not name it: {exc}"
                        )
                except Exception as exc:  # anything else is a defect
                    problems.append(f"{param}={bad!r}: {type(exc).__name__}: {exc}")
                try:
                    writer.flush()
                except Exception as exc:
                    problems.append(f"{param}={bad!r}: accepted, then flush raised {exc!r}")
                    writer.close()
                sentinel += 1
                writer.add_scalar("sentinel", float(sentinel), sentinel)
        try:
            writer.close()
        except Exception as exc:
            problems.append(f"close raised {exc!r}")
    assert problems == [], f"{method}:\n" + "\n".join(problems)
    steps = set()
    for root, _, names in os.walk(log_dir):
        if any("tfevents" in n for n in names):
            for event in raw_events(root):  # TensorBoard's reader checks every CRC
                for value in event.summary.value:
                    if value.tag == "sentinel":
                        steps.add(event.step)
    assert steps == set(range(1, sentinel + 1))


def _hand_built_payloads() -> list[Any]:
    """Payload objects a caller may build and pass to ``add_value``, each with a bad field."""
    from tallyboard_audio.convert import AudioPayload
    from tallyboard_histogram.compute import Histogram
    from tallyboard_hparams.methods import HParamsSummary
    from tallyboard_image.convert import ImagePayload
    from tallyboard_mesh.methods import Mesh
    from tallyboard_pr_curve.compute import PrCurve

    pixels = np.zeros((4, 4, 3), dtype=np.uint8)
    return [
        ImagePayload(pixels, fps=1e-9),
        ImagePayload(pixels, fps=math.nan),
        ImagePayload(np.zeros((2, 4, 4, 3), dtype=np.uint8), fps=4.0),  # frames, no fps
        ImagePayload(pixels.astype(np.float64)),
        ImagePayload(pixels, rescale=1e12),
        ImagePayload(pixels, boxes=np.array([[0, 0, 1, 1.0]]), labels=("bad\ud800",)),
        AudioPayload(np.zeros((8, 1), dtype="<i2"), 1e12),
        AudioPayload(np.zeros((8, 3), dtype="<i2"), 8000.0),
        AudioPayload(np.zeros((8, 1)), 8000.0),
        Histogram(0.0, 1.0, 1.0, 1.0, 1.0, np.array([1.0, 2.0]), np.array([1.0])),
        Histogram(math.nan, 1.0, 1.0, 1.0, 1.0, np.array([1.0]), np.array([1.0])),
        PrCurve(np.zeros((2, 3)), 3),
        PrCurve(np.zeros((6, 3)), 2**40),
        Mesh(np.zeros((1, 3, 2), dtype=np.float32)),
        Mesh(np.zeros((1, 3, 3), dtype=np.float32), json_config="bad\ud800"),
        HParamsSummary("experiment", {"bad\ud800": 1.0}),
        HParamsSummary("experiment", {"k": "bad\ud800"}),
        HParamsSummary("session_start_info", {"k": object()}),  # type: ignore[dict-item]
        HParamsSummary("no_such_part"),
    ]


def builtin_kinds() -> list[str]:
    kinds = get_registry().kinds
    return sorted(
        name
        for name, k in kinds.items()
        if getattr(k.convert, "__module__", type(k.convert).__module__).startswith("tallyboard_")
    )


@pytest.mark.parametrize("kind", builtin_kinds())
def test_every_add_value_is_checked_in_the_call(tmp_path: Path, kind: str) -> None:
    log_dir = tmp_path / "run"
    writer = SummaryWriter(str(log_dir))
    problems: list[str] = []
    sentinel = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for bad in [*BAD_VALUES, *_hand_built_payloads()]:
            shown = repr(bad)[:120]
            try:
                writer.add_value(kind, "v", bad, 1)
            except (TypeError, ValueError):
                pass  # value is the one argument add_value checks here
            except Exception as exc:
                problems.append(f"{shown}: {type(exc).__name__}: {exc}")
            try:
                writer.flush()
            except Exception as exc:
                problems.append(f"{shown}: accepted, then flush raised {exc!r}")
                writer.close()
            sentinel += 1
            writer.add_scalar("sentinel", float(sentinel), sentinel)
        try:
            writer.close()
        except Exception as exc:
            problems.append(f"close raised {exc!r}")
    assert problems == [], f"{kind}:\n" + "\n".join(problems)
    steps = {e.step for e in raw_events(log_dir) for v in e.summary.value if v.tag == "sentinel"}
    assert steps == set(range(1, sentinel + 1))


@pytest.mark.parametrize("plugin", ["scalar", "tensor", "image", "histogram"])
def test_every_summary_record_add_value_is_checked_in_the_call(tmp_path: Path, plugin: str) -> None:
    """SummaryRecord pools values until record(): a bad name or value must fail in add_value,
    or the whole file would be lost at close()."""
    problems: list[str] = []
    step = 0
    good = {
        "scalar": 1.0,
        "tensor": np.ones(2),
        "image": np.zeros((1, 3, 2, 2)),
        "histogram": [1.0],
    }
    with SummaryRecord(str(tmp_path), tensorboard=True) as record, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [(bad, good[plugin]) for bad in BAD_VALUES] + [("v", bad) for bad in BAD_VALUES]
        for name, value in cases:
            try:
                record.add_value(plugin, name, value)
            except (TypeError, ValueError):
                pass
            except Exception as exc:
                problems.append(f"{name!r}, {repr(value)[:80]}: {type(exc).__name__}: {exc}")
            step += 1
            record.add_value("scalar", "sentinel", float(step))
            try:
                record.record(step)
                record.flush()
            except Exception as exc:
                problems.append(f"{name!r}, {repr(value)[:80]}: record/flush raised {exc!r}")
    assert problems == []
    (path,) = [p for p in tmp_path.iterdir() if p.name.endswith("_MS")]
    got = {s for s, tag, _, _ in values(path) if tag == "sentinel"}
    assert got == set(range(1, step + 1))
