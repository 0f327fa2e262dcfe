"""What logging costs a MindSpore training step: tallyboard next to MindSpore, same net, same data.

Run ``python bench/bench_summary_collector.py [steps]`` (needs ``mindspore==2.10.0``). Two cases:

- **record() with operator values**: a Cell whose ``construct`` calls MindSpore's summary
  operators (a scalar, a histogram of 1,000 values, a 1x3x64x64 image), then
  ``SummaryRecord.record(step)``, in PyNative and GRAPH_MODE;
- **SummaryCollector**: ``Model.train`` of a small conv net with the collector in its callbacks,
  ``collect_freq=1`` (every step: loss, the input batch as images, histograms of five
  parameters, the net's operator values), and with MindSpore's defaults (``collect_freq=10``,
  checkpoints for the loss landscape at steps 1-19).

Two more tables time the logging alone, with no training around it: the operator cache filled
as GRAPH_MODE's kernels fill it, then ``record()``; the collector's callbacks driven as
``Model.train`` drives them. On a shared host they are the steadier figures.

The logging overhead of a step is the step with logging minus the step without (the same loop,
no record or collector; the operators still run and their values are dropped). Each run is timed
step by step and end to end *including* ``close()`` (MindSpore hands values to a writer process,
tallyboard to a writer thread: their work counts either way). The tables give the overhead per
step end to end (the whole run with logging minus the whole run without, over the steps), then
its distribution over the steps (each step's time minus the median step without logging): mean,
median, p99. The ratio is MindSpore's end-to-end overhead over tallyboard's. Runs of the three
loops (none, MindSpore, tallyboard) take turns, ``ROUNDS`` times, after one warm-up round; the
table shows the round of median overhead and the range of the ratios.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ROUNDS = 3
TARGET = 10.0


class Overhead:
    """Per-step overhead of logging, from step times with and without it (seconds)."""

    def __init__(
        self, total: float, steps: list[float], base_total: float, base_steps: list[float]
    ) -> None:
        n = len(steps)
        self.end_to_end = (total - base_total) / n
        base = statistics.median(base_steps)
        extra = sorted(s - base for s in steps)
        self.mean = sum(extra) / n
        self.median = extra[n // 2]
        self.p99 = extra[min(n - 1, int(n * 0.99))]
        self.step = statistics.median(base_steps)
        self.cpu = 0.0  # CPU seconds of logging per step, all threads and writer processes

    def line(self) -> str:
        us = 1e6
        return (
            f"{self.end_to_end * us:10.1f} | {self.mean * us:9.1f} {self.median * us:9.1f} "
            f"{self.p99 * us:9.1f} | {self.cpu * us:9.1f} | {self.step * us:9.1f}"
        )


HEADER = (
    "end to end |      mean    median       p99 |       CPU | step w/o  (us of logging per step)"
)


def _clear_operator_caches() -> None:
    """What the loop without logging does with the operators' values: drop them."""
    from mindspore.ops.operations import debug_ops
    from mindspore.train.summary import summary_record

    debug_ops.SUMMARY_TENSOR_CACHE = []
    if summary_record.SUMMARY_TENSOR_CACHE:
        summary_record.SUMMARY_TENSOR_CACHE = {}


# -- record() with operator values ------------------------------------------------------------


def _operator_net() -> Any:
    from mindspore import nn, ops

    class Summaries(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.scalar = ops.ScalarSummary()
            self.histogram = ops.HistogramSummary()
            self.image = ops.ImageSummary()

        def construct(self, x: Any, img: Any) -> Any:
            loss = x.mean()
            self.scalar("loss", loss)
            self.histogram("weights", x)
            self.image("input", img)
            return loss

    return Summaries()


def _record_loop(
    net: Any, inputs: list[tuple[Any, Any]], factory: Callable[[str], Any] | None
) -> tuple[float, list[float]]:
    """Step times of ``net(x, img)`` then ``record(step)`` (or dropping the values). Each step
    reads the net's output, as a training loop reads its loss: PyNative runs operations
    asynchronously, and a loop that never waits for them would not pay for them."""
    clock = time.perf_counter
    steps = [0.0] * len(inputs)
    with tempfile.TemporaryDirectory() as d:
        record = factory(d) if factory is not None else None
        start = clock()
        for i, (x, img) in enumerate(inputs):
            t0 = clock()
            net(x, img).item()
            if record is not None:
                record.record(i + 1)
            else:
                _clear_operator_caches()
            steps[i] = clock() - t0
        if record is not None:
            record.close()
        total = clock() - start
    return total, steps


def bench_record(mode: str, n: int) -> bool:
    import mindspore as ms
    import tallyboard
    from mindspore import Tensor

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    rng = np.random.default_rng(0)
    inputs = [
        (
            Tensor(rng.normal(size=1000).astype(np.float32)),
            Tensor(rng.random((1, 3, 64, 64), dtype=np.float32)),
        )
        for _ in range(n)
    ]
    net = _operator_net()
    contenders: dict[str, Callable[[str], Any] | None] = {
        "none": None,
        "MindSpore": ms.SummaryRecord,
        "tallyboard": tallyboard.SummaryRecord,
    }
    return _report(
        f"record() with operator values, {mode}",
        lambda factory: _record_loop(net, inputs, factory),
        contenders,
    )


# -- SummaryCollector in Model.train ------------------------------------------------------------


def _train_net() -> Any:
    from mindspore import nn, ops

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, pad_mode="valid", has_bias=True)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2, 2)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(4 * 7 * 7, 10)
            self.scalar = ops.ScalarSummary()
            self.histogram = ops.HistogramSummary()

        def construct(self, x: Any) -> Any:
            y = self.fc(self.flatten(self.pool(self.relu(self.conv(x)))))
            self.scalar("logits_mean", y.mean())
            self.histogram("logits", y)
            return y

    return Net()


def _dataset(samples: int, batch: int) -> Any:
    import mindspore.dataset as ds

    rng = np.random.default_rng(0)
    images = rng.random((samples, 3, 16, 16), dtype=np.float32)
    labels = (np.arange(samples) % 10).astype(np.int32)

    def rows() -> Any:  # rows of NumPy arrays (NumpySlicesDataset fails on NumPy 2)
        for i in range(samples):
            yield images[i], labels[i : i + 1].reshape(())

    return ds.GeneratorDataset(rows, ["image", "label"], shuffle=False).batch(batch)


def _train_loop(
    model: Any, dataset: Any, epochs: int, factory: Callable[[str], Any] | None
) -> tuple[float, list[float]]:
    """Step times of ``model.train`` with the collector ``factory(dir)`` makes (or none)."""
    import mindspore as ms

    clock = time.perf_counter
    marks: list[float] = []

    class Clock(ms.train.Callback):  # type: ignore[misc]
        def on_train_step_end(self, run_context: Any) -> None:
            marks.append(clock())

    with tempfile.TemporaryDirectory() as d:
        callbacks = [Clock()] if factory is None else [factory(d), Clock()]
        start = clock()
        model.train(epochs, dataset, callbacks=callbacks, dataset_sink_mode=False)
        total = clock() - start  # the collector's record is closed when train() returns
    steps = [b - a for a, b in zip([start, *marks], marks)]
    return total, steps


def bench_collector(mode: str, n: int, settings: str) -> bool:
    import mindspore as ms
    import tallyboard
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(0)
    batch, per_epoch = 4, 50
    epochs = max(1, n // per_epoch)
    dataset = _dataset(batch * per_epoch, batch)
    net = _train_net()
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    model = ms.train.Model(
        net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), optimizer
    )
    model.train(1, dataset, dataset_sink_mode=False)  # compiles (GRAPH_MODE)
    kwargs: dict[str, Any] = (
        {"collect_freq": 1, "collect_specified_data": {"collect_landscape": None}}
        if settings == "every step"
        else {}
    )
    contenders: dict[str, Callable[[str], Any] | None] = {
        "none": None,
        "MindSpore": lambda d: ms.SummaryCollector(d, **kwargs),
        "tallyboard": lambda d: tallyboard.SummaryCollector(d, **kwargs),
    }
    return _report(
        f"SummaryCollector, Model.train {mode}, {settings}",
        lambda factory: _train_loop(model, dataset, epochs, factory),
        contenders,
    )


# -- logging alone: the callbacks and the record driven without training ----------------------


def _driven_record_loop(
    values: list[tuple[Any, Any, Any]], factory: Callable[[str], Any] | None
) -> tuple[float, list[float]]:
    """Step times of filling the operator cache as GRAPH_MODE's summary kernels fill it (a
    scalar, a histogram of 1,000 values, a 1x3x64x64 image), then ``record(step)``."""
    from mindspore.train.summary import summary_record

    clock = time.perf_counter
    steps = [0.0] * len(values)
    with tempfile.TemporaryDirectory() as d:
        record = factory(d) if factory is not None else None
        start = clock()
        for i, (scalar, histogram, image) in enumerate(values):
            t0 = clock()
            summary_record._cache_summary_tensor_data(
                [
                    {"name": "loss[:Scalar]", "data": scalar},
                    {"name": "weights[:Histogram]", "data": histogram},
                    {"name": "input[:Image]", "data": image},
                ]
            )
            if record is not None:
                record.record(i + 1)
            else:
                _clear_operator_caches()
            steps[i] = clock() - t0
        if record is not None:
            record.close()
        total = clock() - start
    return total, steps


def bench_driven_record(n: int) -> bool:
    import mindspore as ms
    import tallyboard
    from mindspore import Tensor

    rng = np.random.default_rng(0)
    values = [
        (
            Tensor(np.float32(rng.random())),
            Tensor(rng.normal(size=1000).astype(np.float32)),
            Tensor(rng.random((1, 3, 64, 64), dtype=np.float32)),
        )
        for _ in range(n)
    ]
    return _report(
        "record() with operator values, no training (the cache filled as GRAPH_MODE fills it)",
        lambda factory: _driven_record_loop(values, factory),
        {"none": None, "MindSpore": ms.SummaryRecord, "tallyboard": tallyboard.SummaryRecord},
    )


def bench_driven_collector(n: int) -> bool:
    """The collector's callbacks driven as Model.train drives them, every step collecting (the
    batch of 4x3x16x16 images, the loss, five parameters' histograms), without the training."""
    import mindspore as ms
    import tallyboard
    from mindspore import nn
    from mindspore.train.callback._callback import InternalCallbackParam

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = _train_net()
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.train.Model(net, loss_fn, optimizer)
    dataset = _dataset(16, 4)
    batch = list(next(dataset.create_tuple_iterator()))
    specified = {"collect_landscape": None, "collect_graph": False, "collect_dataset_graph": False}

    def loop(factory: Callable[[str], Any] | None) -> tuple[float, list[float]]:
        clock = time.perf_counter
        steps = [0.0] * n
        with tempfile.TemporaryDirectory() as d:
            collector = factory(d) if factory is not None else None
            params = InternalCallbackParam()
            params.update(
                mode="train", dataset_sink_mode=False, epoch_num=1, batch_num=n,
                train_network=model.train_network, network=net, optimizer=optimizer,
                loss_fn=loss_fn, train_dataset=dataset, train_dataset_element=batch,
                list_callback=[collector], parallel_mode="stand_alone", device_number=1,
                net_outputs=ms.Tensor(np.float32(0.5)), cur_epoch_num=1,
            )  # fmt: skip
            context = ms.train.RunContext(params)
            start = clock()
            if collector is not None:
                collector.__enter__()
                collector.begin(context)
            for i in range(1, n + 1):
                t0 = clock()
                params.cur_step_num = i
                if collector is not None:
                    collector.step_end(context)
                steps[i - 1] = clock() - t0
            if collector is not None:
                collector.__exit__(None, None, None)
            total = clock() - start
        return total, steps

    def make(cls: Any) -> Callable[[str], Any]:
        return lambda d: cls(d, collect_freq=1, collect_specified_data=specified)

    return _report(
        "SummaryCollector step, no training (callbacks driven as Model.train drives them)",
        loop,
        {
            "none": None,
            "MindSpore": make(ms.SummaryCollector),
            "tallyboard": make(tallyboard.SummaryCollector),
        },
    )


# -- the table ------------------------------------------------------------------------------------


def _cpu() -> float:
    """CPU seconds of this process's threads and of its finished (waited-for) children: a
    MindSpore writer process, with its pool, counts once ``close()`` has joined it."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _report(
    title: str,
    run: Callable[[Callable[[str], Any] | None], tuple[float, list[float]]],
    contenders: dict[str, Callable[[str], Any] | None],
) -> bool:
    results: dict[str, list[tuple[float, list[float], float]]] = {name: [] for name in contenders}
    for round_ in range(1 + ROUNDS):
        for name, factory in contenders.items():
            cpu = _cpu()
            total, steps = run(factory)
            if round_:
                results[name].append((total, steps, _cpu() - cpu))
    overheads: dict[str, list[Overhead]] = {"MindSpore": [], "tallyboard": []}
    for i in range(ROUNDS):
        base_total, base_steps, base_cpu = results["none"][i]
        for name in overheads:
            total, steps, cpu = results[name][i]
            overhead = Overhead(total, steps, base_total, base_steps)
            overhead.cpu = (cpu - base_cpu) / len(steps)
            overheads[name].append(overhead)
    ratios = [
        m.end_to_end / t.end_to_end for m, t in zip(overheads["MindSpore"], overheads["tallyboard"])
    ]
    cpu_ratios = [m.cpu / t.cpu for m, t in zip(overheads["MindSpore"], overheads["tallyboard"])]
    print(f"\n## {title}: {len(results['none'][0][1])} steps a run")
    print(f"{'':12} {HEADER}")
    for name, runs in overheads.items():
        middle = sorted(runs, key=lambda o: o.end_to_end)[len(runs) // 2]
        print(f"{name:12} {middle.line()}")
    ratio = statistics.median(ratios)
    print(
        f"{'':12} logging overhead end to end: MindSpore's is {ratio:.1f}x tallyboard's "
        f"(rounds {min(ratios):.1f}-{max(ratios):.1f}x; target {TARGET:g}x); CPU time: "
        f"{statistics.median(cpu_ratios):.1f}x (rounds {min(cpu_ratios):.1f}-{max(cpu_ratios):.1f}x)",
        flush=True,
    )
    return ratio >= TARGET


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    steps = int(argv[0]) if argv else 200
    try:
        import mindspore
    except ImportError:
        print("MindSpore is not installed (pip install mindspore==2.10.0): nothing to compare")
        return 0
    # MindSpore's own record forks a writer: start the runtime first, or the fork may catch the
    # backend thread reading the CPU affinity through a pipe and hang (docs/mindspore.md)
    mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    (mindspore.Tensor(np.ones(2, np.float32)) * 2).asnumpy()
    print(
        f"MindSpore {mindspore.__version__}; {ROUNDS} rounds after a warm-up, the three loops "
        "taking turns; the round of median overhead"
    )
    ok = True
    ok &= bench_driven_record(steps)
    ok &= bench_driven_collector(steps)
    for mode in ("pynative", "graph"):
        ok &= bench_record(mode, steps)
    for mode in ("pynative", "graph"):
        ok &= bench_collector(mode, steps, "every step")
    bench_collector("graph", steps, "MindSpore's defaults")  # landscape checkpoints: both pay
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
