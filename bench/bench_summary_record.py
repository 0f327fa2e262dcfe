"""One training step of ``add_value`` + ``record``: tallyboard's SummaryRecord next to MindSpore's.

Run ``python bench/bench_summary_record.py [steps]``. MindSpore is measured in the same process
when it is importable; it is a benchmark-only dependency: ``pip install mindspore==2.10.0``
(CPU build; tallyboard itself never imports it). Without it, tallyboard alone is measured.

The whole cost comes first: the time per step end to end, from the first step to the end of
``close()`` (MindSpore hands each step to a writer process, tallyboard encodes heavy values on a
writer thread; ``close()`` waits for both, so their work counts). Then the caller's own time per
step: mean, median, p99, p99.9. Ratios are MindSpore's end-to-end time over tallyboard's. Each
case runs ``ROUNDS`` rounds, the two interleaved (both see the same machine load), after a
warm-up round of each that is not counted; the table shows the round with the median end-to-end
time and the range of the per-round ratios.

Values are passed as MindSpore users pass them, ``mindspore.Tensor`` (rows ``[Tensor]``), and,
for tallyboard, as NumPy arrays too (rows ``[numpy]``). A second table times the ways to turn a
Tensor into a Python number or a NumPy array, next to tallyboard's conversion; a last one splits a
tallyboard step's time between the caller's thread and the writer thread (CPU time of each).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import COST_HEADER, Cost, median_cost, spread, timed_loop

#: Minimum end-to-end ratio (MindSpore / tallyboard) per case, with Tensors.
TARGETS = {"one scalar": 20.0, "ten scalars": 20.0, "image 1x3x64x64": 20.0, "histogram 1000": 20.0}
ROUNDS = 3
#: Rounds run first and not counted: a fresh process (and a fresh virtual machine) pays for
#: memory it touches the first time, the files' page cache included (on the development machine
#: a 2 MiB append to a new file took 3.5 ms in the first round, 0.6 ms once freed pages were
#: reused), whoever writes.
WARMUP_ROUNDS = 1


def cases() -> dict[str, list[tuple[str, str, np.ndarray]]]:
    """Each step's values: (plugin, tag, value)."""
    rng = np.random.default_rng(0)
    return {
        "one scalar": [("scalar", "loss", np.array(0.5, dtype=np.float32))],
        "ten scalars": [
            ("scalar", f"metric{i}", np.array(i / 10, dtype=np.float32)) for i in range(10)
        ],
        "image 1x3x64x64": [("image", "img", rng.random((1, 3, 64, 64), dtype=np.float32))],
        "histogram 1000": [("histogram", "w", rng.normal(size=1000).astype(np.float32))],
    }


def run(factory: Callable[[str], Any], values: list[tuple[str, str, Any]], steps: int) -> Cost:
    """The cost of ``steps`` steps, each ``add_value`` of every value then ``record(step)``."""
    with tempfile.TemporaryDirectory() as d:

        def step(record: Any, i: int) -> None:
            for plugin, tag, value in values:
                record.add_value(plugin, tag, value)
            record.record(i)

        return timed_loop(lambda: factory(d), step, steps)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    steps = int(argv[0]) if argv else 2000
    from tallyboard import SummaryRecord

    try:
        import mindspore
        from mindspore import SummaryRecord as MsRecord
        from mindspore import Tensor
    except ImportError:
        mindspore = None
        print("MindSpore is not installed (pip install mindspore==2.10.0): tallyboard alone")
    ms_steps = max(500, steps // 2)
    print(
        f"{steps} steps a round for tallyboard, {ms_steps} for MindSpore, {ROUNDS} rounds "
        f"interleaved after {WARMUP_ROUNDS} not counted; the round of median end-to-end time"
    )
    print(f"{'case':34} {COST_HEADER}")
    ok = True
    for name, values in cases().items():
        runs: dict[str, list[Cost]] = {"numpy": [], "Tensor": [], "MindSpore": []}
        tensors = None
        if mindspore is not None:
            tensors = [(plugin, tag, Tensor(value)) for plugin, tag, value in values]
        for round_ in range(WARMUP_ROUNDS + ROUNDS):
            costs = {"numpy": run(SummaryRecord, values, steps)}
            if tensors is not None:
                costs["Tensor"] = run(SummaryRecord, tensors, steps)
                costs["MindSpore"] = run(MsRecord, tensors, ms_steps)
            if round_ >= WARMUP_ROUNDS:
                for key, cost in costs.items():
                    runs[key].append(cost)
        print(f"{name + ' tallyboard [numpy]':34} {median_cost(runs['numpy']).line()}")
        if tensors is None:
            continue
        print(f"{name + ' tallyboard [Tensor]':34} {median_cost(runs['Tensor']).line()}")
        label = f"{name} MindSpore {mindspore.__version__}"
        print(f"{label:34} {median_cost(runs['MindSpore']).line()}")
        ratios = [m.end_to_end / t.end_to_end for m, t in zip(runs["MindSpore"], runs["Tensor"])]
        ratio = statistics.median(ratios)
        ok &= ratio >= TARGETS[name]
        print(
            f"{'':34} end to end, Tensors: {ratio:.1f}x MindSpore (rounds {spread(ratios)}x; "
            f"target {TARGETS[name]:g}x)",
            flush=True,
        )
    if mindspore is not None:
        conversions(Tensor)
        png_sizes(MsRecord, Tensor)
    cpu_split(steps)
    return 0 if ok else 1


def cpu_split(steps: int, rounds: int = 3) -> None:
    """Where a tallyboard step's time goes: the caller thread's CPU time and the other threads'
    (the writer thread's), next to the wall time, per step end to end incl. ``close()`` (NumPy
    values). Their sum over the wall time says how much the two ran at once: about 1.0 is one
    after the other (the GIL lets only one of them run Python), 2.0 both all the time."""
    from tallyboard import SummaryRecord

    print(f"\n## CPU of a tallyboard step, us (median of {rounds} runs of {steps} steps)")
    print(f"{'case':34} {'wall':>8} {'caller':>8} {'writer':>8} {'at once':>8}")
    for name, values in cases().items():
        results = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as d:
                record = SummaryRecord(d)
                for plugin, tag, value in values:  # the file and its writer thread start here
                    record.add_value(plugin, tag, value)
                record.record(0)
                wall0, caller0, process0 = (
                    time.perf_counter(),
                    time.thread_time(),
                    time.process_time(),
                )
                for i in range(1, steps + 1):
                    for plugin, tag, value in values:
                        record.add_value(plugin, tag, value)
                    record.record(i)
                record.close()
                wall = time.perf_counter() - wall0
                caller = time.thread_time() - caller0
                others = time.process_time() - process0 - caller
            results.append((wall, caller, others))
        wall, caller, others = sorted(results)[len(results) // 2]
        us = 1e6 / steps
        print(
            f"{name:34} {wall * us:8.1f} {caller * us:8.1f} {others * us:8.1f} "
            f"{(caller + others) / wall:8.2f}",
            flush=True,
        )


def png_sizes(ms_record: Any, tensor_type: Any) -> None:
    """PNG bytes of one image step, MindSpore's and tallyboard's, and whether the pixels match."""
    import io
    import os

    from PIL import Image
    from tallyboard import SummaryRecord

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    import mindspore_reader

    y, x = np.mgrid[0:64, 0:64] / 63.0
    gradient = np.stack([x, y, (x + y) / 2])[None].astype(np.float32)
    images = {
        "1x3x64x64 gradient": gradient,
        "1x3x64x64 radial": np.stack([np.hypot(x - 0.5, y - 0.5)] * 3)[None].astype(np.float32),
        "1x3x64x64 waves": np.stack([np.sin(6 * x) / 2 + 0.5, np.cos(5 * y) / 2 + 0.5, x * y])[
            None
        ].astype(np.float32),
        "8x3x64x64 gradients": np.repeat(gradient, 8, 0),
        "1x3x64x64 noise": np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32),
        "32x3x32x32 noise": np.random.default_rng(1).random((32, 3, 32, 32), dtype=np.float32),
        "32x3x32x32 noise < 0.5": np.random.default_rng(2).random((32, 3, 32, 32), dtype=np.float32)
        / 2,
    }

    def png(factory: Any, value: Any) -> bytes:
        with tempfile.TemporaryDirectory() as d:
            with factory(d) as record:
                record.add_value("image", "img", value)
                record.record(1)
            (path,) = [os.path.join(d, n) for n in os.listdir(d) if n.endswith("_MS")]
            for event in mindspore_reader.read_events(path):
                if event.HasField("summary"):
                    return bytes(event.summary.value[0].image.encoded_image)
        raise AssertionError("no image written")

    print("\n## PNG bytes of one image step")
    for name, value in images.items():
        ours, theirs = png(SummaryRecord, value), png(ms_record, tensor_type(value))
        same = np.array_equal(
            np.asarray(Image.open(io.BytesIO(ours))), np.asarray(Image.open(io.BytesIO(theirs)))
        )
        print(
            f"{name:22} MindSpore {len(theirs):6,} B  tallyboard {len(ours):6,} B "
            f"({len(ours) / len(theirs):.2f}x)  pixels identical: {same}"
        )


def conversions(tensor_type: Any, n: int = 2000) -> None:
    """Microseconds to turn a fresh Tensor into a number or a NumPy array, each way MindSpore
    offers, next to tallyboard's conversion (``tallyboard.faces.mindspore_values``)."""
    from tallyboard.faces import mindspore_values

    rng = np.random.default_rng(1)
    values = {
        "scalar float32": np.float32(0.5),
        "1x3x64x64 float32": rng.random((1, 3, 64, 64), dtype=np.float32),
        "1000 float32": rng.normal(size=1000).astype(np.float32),
    }
    ways: dict[str, Callable[[Any], Any]] = {
        "Tensor.asnumpy()": lambda t: t.asnumpy(),
        "np.asarray(t)": np.asarray,
        "t.__array__()": lambda t: t.__array__(),
        "np.frombuffer(t.get_bytes())": lambda t: np.frombuffer(t.get_bytes(), np.float32),
        "the same, reshaped to t.shape (floor)": lambda t: np.frombuffer(
            t.get_bytes(), np.float32
        ).reshape(t.shape),
        "DLPack: t.to_dlpack()": lambda t: t.to_dlpack(),
        "t.item()": lambda t: t.item(),
        "t._item() (what item() calls)": lambda t: t._item(),
        "t._dtype, t._item() (safe floor)": lambda t: (t._dtype, t._item()),
        "tallyboard": None,
    }
    print(f"\n## Tensor -> NumPy or number, us per fresh Tensor (median of 3 runs of {n})")
    print(f"{'way':30} " + " ".join(f"{v:>18}" for v in values))
    for way, fn in ways.items():
        cells = []
        for value in values.values():
            if fn is None:
                fn_here: Callable[[Any], Any] = (
                    mindspore_values.scalar if value.ndim == 0 else mindspore_values.to_numpy
                )
            elif "item()" in way and value.ndim:
                cells.append(f"{'-':>18}")
                continue
            else:
                fn_here = fn
            times = []
            for _ in range(3):
                batch = [tensor_type(value) for _ in range(n)]
                t0 = time.perf_counter()
                for t in batch:
                    fn_here(t)
                times.append((time.perf_counter() - t0) / n * 1e6)
            cells.append(f"{statistics.median(times):16.2f}us")
        print(f"{way:30} " + " ".join(cells), flush=True)
    # the conversion is checked against MindSpore's own asnumpy()
    for value in values.values():
        t = tensor_type(value)
        if value.ndim == 0:
            assert mindspore_values.scalar(t) == float(t.asnumpy())
        else:
            got = mindspore_values.to_numpy(t)
            assert got.dtype == t.asnumpy().dtype and np.array_equal(got, t.asnumpy())


if __name__ == "__main__":
    raise SystemExit(main())
