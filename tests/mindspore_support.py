"""Real MindSpore for the tests, in one child process per test module.

Importing MindSpore changes the importing process for good: MindSpore 2.10 sets
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` and ``LD_LIBRARY_PATH`` in ``os.environ`` (every
later child of the test session would inherit them: TensorBoard servers, Ray workers, ...), raises
the recursion limit to 10000, adds warning filters and loads about 1,900 modules. So the test
session never imports it. A test module that needs MindSpore declares *scenarios* with
:func:`scenario`: functions that take a directory of their own and write there what MindSpore and
tallyboard produce (files, and observations through :func:`note`). A module-scoped fixture runs
them all in one child (``run_scenarios``: MindSpore imported once, compiled networks shared
through ``functools.cache``), and each test reads its scenario's files back with the independent
readers (``mindspore_reader``, TensorBoard's ``EventAccumulator``). A scenario that raised fails
the tests that read it, with its traceback; the others are unaffected.

MindSpore 2.10 with NumPy 2 (what this environment has) has rough edges the scenarios avoid:
``GeneratorDataset`` rows must be NumPy arrays (its ``np.array(x, copy=False)`` fails on NumPy
scalars, which NumPy 2 would have to copy; the same line makes ``NumpySlicesDataset`` fail), and
in PyNative mode an operation given a Python tuple (``Tensor.reshape((1, 2))``) raises
``SystemError`` (MindSpore's extension fails to load NumPy 1's C API): nets take inputs of the
shape they need. GRAPH_MODE compiles those fine.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TESTS = Path(__file__).resolve().parent
_SCENARIOS: dict[str, Callable[[Path], None]] = {}
_notes: dict[str, Any] = {}
#: Seconds one module's child may take (MindSpore's import is 2-3 s, a graph compile about 1 s).
TIMEOUT = float(os.environ.get("TALLYBOARD_MINDSPORE_TIMEOUT", "240"))


def scenario(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    """Register ``fn(out)`` to run in the module's MindSpore child (by its name)."""
    _SCENARIOS[fn.__name__] = fn
    return fn


def note(key: str, value: Any) -> None:
    """Record a JSON-able observation of the running scenario (read back as ``result.notes``)."""
    _notes[key] = value


def error_of(call: Callable[[], Any]) -> list[str] | None:
    """``[exception type name, message]`` of what ``call()`` raises, None if it returns."""
    try:
        call()
    except Exception as exc:
        return [type(exc).__name__, str(exc)]
    return None


@dataclass
class Result:
    """What one scenario left: its directory, its notes, and its error if it raised."""

    path: Path
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.error is not None:
            raise AssertionError(
                f"scenario {self.path.name} failed in the MindSpore child:\n{self.error}"
            )


class Results:
    def __init__(self, out: Path, log: str) -> None:
        self.out = out
        self.log = log

    def __getitem__(self, name: str) -> Result:
        result = self.out / name / "result.json"
        if not result.exists():
            raise AssertionError(
                f"scenario {name} did not run; the child's output:\n{self.log[-4000:]}"
            )
        data = json.loads(result.read_text())
        return Result(self.out / name, data["notes"], data["error"], data["seconds"])


def run_scenarios(module_file: str, out: Path, names: Iterable[str] = ()) -> Results:
    """Run the scenarios of ``module_file`` (all, or ``names``) in a MindSpore child.

    The child writes its output to a file, not a pipe, and runs in a session of its own: a
    MindSpore writer process it leaves behind (they outlive their parent while it is unreaped)
    can then neither hold the test waiting for the pipe's end nor outlive the test; the whole
    group is killed once the child is done or its time is up.
    """
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "GLOG_v": "3"}
    log_path = out / "child.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(TESTS / "mindspore_support.py"), module_file, str(out), *names],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(out),
            start_new_session=True,
        )
        try:
            returncode = proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    text = log_path.read_text(errors="replace")
    if returncode is None:
        raise AssertionError(f"the MindSpore child took more than {TIMEOUT} s:\n{text[-6000:]}")
    if returncode:
        raise AssertionError(f"the MindSpore child failed ({returncode}):\n{text[-6000:]}")
    return Results(out, text)


def summary_file(path: Path) -> Path:
    """The one MindSpore summary file (``*_MS``) in ``path``."""
    (found,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    return found


def summary_values(path: Path) -> list[tuple[int, str, str, Any]]:
    """``(step, tag, kind, value)`` of every summary value of the summary file in ``path``.

    Like ``mindspore_reader.values``, each summary Event checked complete and canonical, but a
    graph Event is let through (the reader knows only its name, so it cannot re-encode it)."""
    import mindspore_reader as msr

    out = []
    for payload in msr.read_records(summary_file(path)):
        event = msr.Event.FromString(payload)
        if event.HasField("graph_def"):
            continue
        event = msr._parse(msr.Event, payload)
        for value in event.summary.value:
            kind = msr._which(value)
            out.append((event.step, value.tag, kind, getattr(value, kind) if kind else None))
    return out


LINEAGE_FIELDS = ("train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info")


def lineage_records(path: Path) -> list[tuple[str, Any]]:
    """``(field, message)`` of every LineageEvent of the lineage file in ``path``, parsed by the
    independent reader (CRCs checked; a message with map fields may list them in any order, so
    messages are compared parsed, not as bytes)."""
    import mindspore_reader as msr

    (found,) = [p for p in path.iterdir() if p.name.endswith("_lineage")]
    out = []
    for payload in msr.read_records(found):
        event = msr.LineageEvent.FromString(payload)
        assert event.IsInitialized() and not event.HasField("step")
        (field,) = [f for f in LINEAGE_FIELDS if event.HasField(f)]
        out.append((field, getattr(event, field)))
    return out


def fresh_operator_caches() -> None:
    """In the child: forget what MindSpore's summary operators left (a scenario's Model.eval
    leaves values that the next record would otherwise take, as MindSpore's would)."""
    from mindspore.ops.operations import debug_ops
    from mindspore.train.summary import summary_record

    debug_ops.SUMMARY_TENSOR_CACHE = []
    summary_record._get_summary_tensor_data()


def comparable(value: Any, kind: str) -> Any:
    """A summary value as two writers of the same data must agree on it: the exact bytes, but
    for an image its size and decoded pixels (PNG compression may differ, pixels may not)."""
    if kind == "scalar_value":
        return "nan" if math.isnan(value) else value
    if kind == "image":
        import numpy as np
        from PIL import Image

        pixels = np.asarray(Image.open(io.BytesIO(value.encoded_image)))
        return (value.height, value.width, value.colorspace, pixels.tobytes())
    return value.SerializeToString()


def summary_net() -> Any:
    """In the child: a conv and a dense layer with MindSpore's summary operators on the logits
    (the tests' network; its Cells are ``conv``, ``flatten`` and ``fc``)."""
    from mindspore import nn, ops

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 2, 3, pad_mode="valid", has_bias=True)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(2 * 6 * 6, 4)
            self.scalar = ops.ScalarSummary()
            self.histogram = ops.HistogramSummary()
            self.tensor = ops.TensorSummary()

        def construct(self, x: Any) -> Any:
            y = self.fc(self.flatten(self.conv(x)))
            self.scalar("logits_mean", y.mean())
            self.histogram("logits", y)
            self.tensor("logits_t", y)
            return y

    return Net()


def image_dataset(samples: int = 16, batch: int = 4) -> Any:
    """Images (3x8x8 in [0, 1)) and labels from a generator: rows must be NumPy arrays (MindSpore
    2.10's ``np.array(row, copy=False)`` fails on NumPy 2 for anything it would have to copy)."""
    import mindspore.dataset as ds

    def rows() -> Any:
        rng = np.random.default_rng(0)
        for i in range(samples):
            yield rng.random((3, 8, 8), dtype=np.float32), np.array(i % 4, np.int32)

    return ds.GeneratorDataset(rows, ["image", "label"], shuffle=False).batch(batch)


def _settle_mindspore() -> None:
    """Start MindSpore's runtime before any scenario forks. MindSpore's own SummaryRecord forks
    its writer process; if that happens while MindSpore's PyNative backend thread is still
    starting its thread pool (the first operations run asynchronously, and it reads the CPU
    affinity from a shell command through a pipe), the writer inherits the pipe and the
    training process waits for the pipe's end forever (seen once in four runs). Waiting for a
    first operation's result here starts the pool before anything forks."""
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    (ms.Tensor(np.ones(2, np.float32)) * 2).asnumpy()


def _main(argv: list[str]) -> int:
    module_file, out, *names = argv
    _settle_mindspore()
    name = Path(module_file).stem  # GRAPH_MODE parses a Cell's module by its name
    spec = importlib.util.spec_from_file_location(name, module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    for name in names or list(_SCENARIOS):  # noqa: B020 (the module's name is done with)
        path = Path(out) / name
        path.mkdir(parents=True, exist_ok=True)
        _notes.clear()
        error = None
        start = time.perf_counter()
        try:
            _SCENARIOS[name](path)
        except BaseException:
            error = traceback.format_exc()
        seconds = time.perf_counter() - start
        (path / "result.json").write_text(
            json.dumps({"notes": _notes, "error": error, "seconds": seconds}, default=str)
        )
    return 0


if __name__ == "__main__":  # the child: scenarios register in the imported module, not here
    sys.path.insert(0, str(TESTS))
    import mindspore_support

    sys.exit(mindspore_support._main(sys.argv[1:]))
