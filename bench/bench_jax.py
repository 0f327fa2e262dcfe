"""jax.Array values: tallyboard's CLU face against CLU's torch writer and tensorboardX.

"tb, copy" is tallyboard with ``tallyboard.values.COPY_DEVICE_VALUES = True``: each value still
being computed, scalars too, is copied on its device in the call, so that deleting or donating
it afterwards loses nothing (by default only arrays of more than one element are: a scalar so
lost is reported by a later call, not written).

A jitted training step of a small MLP on CPU (about 10 ms) is dispatched, and its loss is
logged while it is still being computed. The references cannot log a value that is not there
yet: CLU's TorchTensorboardWriter takes NumPy arrays only (so the loop hands it
``np.asarray(loss)``, as its users must), tensorboardX converts it with ``np.asarray`` itself;
either way the call waits for the step. tallyboard starts the copy and returns.

Tables:
1. the caller's time for ``write_scalars(step, {"loss": loss})`` right after the step is
   dispatched (mean, median, p99 per call, and end to end per step including close());
2. a loop logging loss and accuracy every step against the same loop logging nothing: one loop
   alternates stretches of CHUNK steps logging and not (ABBA, so neither always goes first and
   both see the same machine load), PAIRS pairs per writer; the speed ratio (silent time /
   logging time, >= 0.95 is the goal) of each pair, its mean, median and 10th percentile (the
   tail), and of the whole (the writer's flush() after each logging stretch and its close()
   charged to the logging side); a row "none (A/A)" logs nothing on either side, so its
   spread is the machine's noise;
3. images (64x64x3 floats) and histograms (100,000 values) of jax arrays, per call and end to
   end including close().

CLU's ``clu.metric_writers`` package imports TensorFlow in its ``__init__``; its torch writer
module is loaded from the installed CLU without it. Run: ``python bench/bench_jax.py``
(``--quick``: fewer steps; ``--only=scalars|loop|arrays``: one table).
"""

from __future__ import annotations

import functools
import importlib
import os
import statistics
import sys
import time
import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from common import COST_HEADER, Cost, fresh_dir, median_cost

QUICK = "--quick" in sys.argv
STEPS = 60 if QUICK else 200
REPEATS = 3
PAIRS = 30 if QUICK else 100
CHUNK = 10  # steps per stretch of the interleaved loop
BATCH = 512  # the MLP's batch: a step of about 10 ms on the 2-core host, as the issue sets it
#: ``--only=scalars``, ``--only=loop`` or ``--only=arrays``: that table alone.
PART = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), None)


def clu_torch_writer() -> type:
    import clu

    package = types.ModuleType("clu.metric_writers")
    package.__path__ = [os.path.join(os.path.dirname(clu.__file__), "metric_writers")]
    sys.modules.setdefault("clu.metric_writers", package)
    module = importlib.import_module("clu.metric_writers.torch_tensorboard_writer")
    return module.TorchTensorboardWriter  # type: ignore[no-any-return]


class XWriter:
    """tensorboardX behind CLU's write_scalars/write_images/write_histograms."""

    def __init__(self, logdir: str) -> None:
        from tensorboardX import SummaryWriter

        self._w = SummaryWriter(logdir)

    def write_scalars(self, step: int, scalars: dict) -> None:
        for k, v in scalars.items():
            self._w.add_scalar(k, v, step)

    def write_images(self, step: int, images: dict) -> None:
        for k, v in images.items():
            self._w.add_image(k, v, step, dataformats="HWC")

    def write_histograms(self, step: int, arrays: dict) -> None:
        for k, v in arrays.items():
            self._w.add_histogram(k, v, step)

    def flush(self) -> None:
        self._w.flush()

    def close(self) -> None:
        self._w.close()


class NoWriter:
    """Logs nothing: the loop table's A/A row, the ratio's spread on this machine when both
    sides do the same work."""

    def __init__(self, logdir: str) -> None:
        pass

    def write_scalars(self, step: int, scalars: dict) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def mlp():
    """A jitted SGD step of a 3-layer MLP; about 10 ms on the 2-core host
    (2.7 ms with a batch of 128, which the first tables used)."""
    key = jax.random.key(0)
    sizes = (512, 512, 512, 10)
    params = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        params.append(
            (jax.random.normal(jax.random.fold_in(key, i), (a, b)) * a**-0.5, jnp.zeros(b))
        )
    x = jax.random.normal(key, (BATCH, 512))
    y = jax.random.randint(key, (BATCH,), 0, 10)

    def loss_fn(p):
        h = x
        for w, b in p[:-1]:
            h = jax.nn.relu(h @ w + b)
        logits = h @ p[-1][0] + p[-1][1]
        loss = -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(BATCH), y])
        return loss, jnp.mean(jnp.argmax(logits, -1) == y)

    @jax.jit
    def step(p):
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(p)
        return jax.tree.map(lambda a, g: a - 0.01 * g, p, grads), loss, acc

    params, loss, acc = step(params)
    loss.block_until_ready()
    return step, params


def writers() -> dict:
    from tallyboard import values
    from tallyboard_jax.metric_writers import MetricWriter

    class DeviceCopy(MetricWriter):
        """tallyboard with ``values.COPY_DEVICE_VALUES = True`` around each call."""

        def __getattribute__(self, name: str) -> Any:
            method = super().__getattribute__(name)
            if not name.startswith("write_"):
                return method

            def call(*args: Any, **kwargs: Any) -> Any:
                mode, values.COPY_DEVICE_VALUES = values.COPY_DEVICE_VALUES, True
                try:
                    return method(*args, **kwargs)
                finally:
                    values.COPY_DEVICE_VALUES = mode

            return call

    torch_clu = clu_torch_writer()
    return {
        "tallyboard": (MetricWriter, lambda v: v),
        "tb, copy": (DeviceCopy, lambda v: v),
        "CLU torch": (torch_clu, np.asarray),  # CLU's torch writer takes NumPy only
        "tensorboardX": (XWriter, lambda v: v),  # converts with np.asarray itself
    }


def scalar_latency(make, convert, step, params) -> Cost:
    writer = make(fresh_dir("jax"))
    calls = []
    start = time.perf_counter()
    for i in range(STEPS):
        params, loss, _ = step(params)
        t0 = time.perf_counter()
        writer.write_scalars(i, {"loss": convert(loss)})
        calls.append(time.perf_counter() - t0)
    writer.close()
    jax.block_until_ready(params)
    return Cost(time.perf_counter() - start, calls)


def loop(make, convert, step, params) -> tuple[list[float], float, float]:
    """The speed ratio (silent / logging) of each of PAIRS pairs of stretches, and the seconds
    per step logging (close() included) and silent over all of them. Stretches go ABBA in one
    loop, with one writer; at the end of each the device is drained and, after logging, the
    writer flushed (so no writing spills into the next stretch: the logging side pays all of
    it, and a flush besides)."""
    writer = make(fresh_dir("jaxloop"))
    ratios = []
    spent = {True: 0.0, False: 0.0}
    i = 0
    for pair in range(PAIRS):
        times = {}
        for log in (True, False) if pair % 2 == 0 else (False, True):
            start = time.perf_counter()
            for _ in range(CHUNK):
                params, loss, acc = step(params)
                if log:
                    writer.write_scalars(i, {"loss": convert(loss), "accuracy": convert(acc)})
                i += 1
            jax.block_until_ready(params)
            if log:
                writer.flush()
            times[log] = time.perf_counter() - start
            spent[log] += times[log]
        ratios.append(times[False] / times[True])
    start = time.perf_counter()
    writer.close()
    spent[True] += time.perf_counter() - start
    steps = PAIRS * CHUNK
    return ratios, spent[True] / steps, spent[False] / steps


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def heavy(make, convert, what: str, n: int) -> Cost:
    key = jax.random.key(1)
    images = [jax.random.uniform(jax.random.fold_in(key, i), (64, 64, 3)) for i in range(n)]
    values = [jax.random.normal(jax.random.fold_in(key, i), (100_000,)) for i in range(n)]
    jax.block_until_ready((images, values))
    writer = make(fresh_dir("jaxheavy"))
    calls = []
    start = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        if what == "image":
            writer.write_images(i, {"img": convert(images[i])})
        else:
            writer.write_histograms(i, {"h": convert(values[i])})
        calls.append(time.perf_counter() - t0)
    writer.close()
    return Cost(time.perf_counter() - start, calls)


def compare(table: dict, run: Any) -> dict[str, Cost]:
    """``run(make, convert)`` for each writer, the median of REPEATS runs by end-to-end time,
    printed with the references' ratios to tallyboard."""
    print(f"{'writer':14s} {COST_HEADER}")
    costs = {}
    for name, (make, convert) in table.items():
        costs[name] = median_cost([run(make, convert) for _ in range(REPEATS)])
        print(f"{name:14s} {costs[name].line()}")
    for mine in ("tallyboard", "tb, copy"):
        ours = costs[mine]
        for name in ("CLU torch", "tensorboardX"):
            them = costs[name]
            print(
                f"{name} / {mine}: end to end {them.end_to_end / ours.end_to_end:.2f}x, caller "
                f"mean {them.mean / ours.mean:.1f}x, median {them.median / ours.median:.1f}x, "
                f"p99 {them.p99 / ours.p99:.1f}x"
            )
    return costs


def main() -> None:
    step, params = mlp()
    t0 = time.perf_counter()
    for _ in range(20):
        params, loss, _ = step(params)
    loss.block_until_ready()
    print(
        f"jax {jax.__version__}, {jax.devices()[0]}; one step of the MLP: "
        f"{(time.perf_counter() - t0) / 20 * 1e3:.1f} ms; {STEPS} steps, median of {REPEATS}"
    )
    table = writers()
    for make, convert in table.values():  # warm up every writer once (jit of the copy)
        scalar_latency(make, convert, step, params)

    if PART in (None, "scalars"):
        print("\n## write_scalars(step, {'loss': loss}) while loss is being computed")
        compare(table, lambda make, convert: scalar_latency(make, convert, step, params))
    if PART in (None, "loop"):
        loop_table(table, step, params)
    if PART in (None, "arrays"):
        arrays(table)


def loop_table(table: dict, step: Any, params: Any) -> None:
    table = {**table, "none (A/A)": (NoWriter, lambda v: v)}
    print("\n## loop logging loss and accuracy every step vs the same loop logging nothing")
    print(
        f"{PAIRS} pairs of {CHUNK}-step stretches per writer; ratio = silent / logging time"
        f"\n{'writer':14s} {'ms/step log':>11s} {'ms/step silent':>14s} {'whole':>7s} "
        f"{'mean':>7s} {'median':>7s} {'p10':>7s} {'min':>7s}"
    )
    for name, (make, convert) in table.items():
        ratios, logged, silent = loop(make, convert, step, params)
        print(
            f"{name:14s} {logged * 1e3:11.2f} {silent * 1e3:14.2f} {silent / logged:7.3f} "
            f"{statistics.mean(ratios):7.3f} {statistics.median(ratios):7.3f} "
            f"{percentile(ratios, 0.1):7.3f} {min(ratios):7.3f}"
        )


def arrays(table: dict) -> None:
    for what, n in (("image", 100), ("histogram", 100)):
        for make, convert in table.values():  # warm up every writer once (first imports)
            heavy(make, convert, what, 5)
        print(
            f"\n## write_{what}s of jax arrays ({n} calls; "
            f"{'64x64x3 floats' if what == 'image' else '100,000 values'})"
        )
        compare(table, functools.partial(heavy, what=what, n=n))


if __name__ == "__main__":
    main()
