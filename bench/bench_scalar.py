"""add_scalar end to end (incl. close) and caller latency: plugboard vs torch vs tensorboardX.

Also ``import plugboard`` time. Run: ``python bench/bench_scalar.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import warnings

from common import fresh_dir, median_of, print_table, timed_per_call

N = 20_000
REPEATS = 5


def writers() -> dict[str, type]:
    from plugboard import SummaryWriter
    from tensorboardX import SummaryWriter as XWriter
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    return {"plugboard": SummaryWriter, "torch": TorchWriter, "tensorboardX": XWriter}


def end_to_end(cls: type, n: int = N) -> float:
    w = cls(fresh_dir("scalar"))

    def body() -> None:
        add = w.add_scalar
        for i in range(n):
            add("loss", 0.5, i)
        w.close()

    return timed_per_call(n, body)


def latencies(cls: type, n: int = N) -> tuple[float, float]:
    w = cls(fresh_dir("lat"))
    add, clock = w.add_scalar, time.perf_counter_ns
    samples = []
    for i in range(n):
        t0 = clock()
        add("loss", 0.5, i)
        samples.append(clock() - t0)
    w.close()
    q = statistics.quantiles(samples, n=100)
    return q[49] / 1000, q[98] / 1000


def peak_memory_kib(cls: type, n: int = 200_000) -> float:
    """Peak Python memory (tracemalloc) while logging ``n`` scalars as fast as possible."""
    import tracemalloc

    w = cls(fresh_dir("mem"))
    tracemalloc.start()
    add = w.add_scalar
    for i in range(n):
        add("loss", 0.5, i)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    w.close()
    return peak / 1024


def import_time_ms(repeats: int = 7) -> float:
    code = (
        "import time; t=time.perf_counter(); import plugboard; print((time.perf_counter()-t)*1000)"
    )
    runs = [
        float(subprocess.check_output([sys.executable, "-c", code]).decode())
        for _ in range(repeats)
    ]
    return statistics.median(runs)


def heavy_modules_after_import() -> list[str]:
    code = (
        "import sys, plugboard; print(' '.join(m for m in ('PIL', 'matplotlib', 'torch', "
        "'google.protobuf.descriptor_pb2', 'soundfile', 'numpy') if m in sys.modules))"
    )
    return subprocess.check_output([sys.executable, "-c", code]).decode().split()


def main() -> None:
    warnings.simplefilter("ignore")
    ws = writers()
    e2e = {name: median_of(REPEATS, lambda c=cls: end_to_end(c)) for name, cls in ws.items()}
    lat = {name: latencies(cls) for name, cls in ws.items()}
    rows = [
        (f"add_scalar end to end incl. close (n={N}) vs torch", e2e["plugboard"], e2e["torch"]),
        (
            "add_scalar end to end incl. close vs tensorboardX",
            e2e["plugboard"],
            e2e["tensorboardX"],
        ),
        ("caller p50 latency vs torch", lat["plugboard"][0], lat["torch"][0]),
        ("caller p99 latency vs torch", lat["plugboard"][1], lat["torch"][1]),
        ("caller p99 latency vs tensorboardX", lat["plugboard"][1], lat["tensorboardX"][1]),
    ]
    print_table(f"add_scalar (median of {REPEATS} runs)", rows)
    mem = {name: peak_memory_kib(cls) for name, cls in ws.items()}
    print(
        "\npeak Python memory while logging 200,000 scalars flat out: "
        + ", ".join(f"{name} {kib:,.0f} KiB" for name, kib in mem.items())
    )
    print(
        f"\nimport plugboard: {import_time_ms():.1f} ms (median of 7 fresh processes); "
        f"heavy modules loaded by it: {heavy_modules_after_import() or 'none'}"
    )


if __name__ == "__main__":
    main()
