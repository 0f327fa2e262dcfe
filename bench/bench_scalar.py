"""add_scalar end to end (incl. close) and caller latency: tallyboard vs torch vs tensorboardX.

Long runs (200,000 and 1,000,000 calls) put tallyboard next to the "minimal honest writer"
(:mod:`floor_writer`: cached tag bytes, struct-packed Event, C CRC-32C, one write at close), the
floor of what Python can do per scalar, run interleaved in the same process; torch and
tensorboardX run fewer calls (about 55 us each) and are compared per call. Peak RSS is measured in
fresh processes: 1,000,000 scalars, and large images written to a stalled disk (memory must stay
within the pending-bytes limit, 64 MiB): 1,000 that deflate well (a ramp) and 300 of noise (stored
PNGs as large as their pixels). Also ``import tallyboard`` time.
The long-run table also has three tags logged in turn (records of several layouts interleaved),
and the caller's latency percentiles over 1,000,000 calls are printed.
Run: ``python bench/bench_scalar.py`` (``--quick``: long runs of 200,000 only, fewer repeats;
``--rss``: the peak RSS cases only).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import warnings

from common import COST_HEADER, fresh_dir, median_of, print_table, timed_loop, timed_per_call
from floor_writer import FloorWriter

N = 20_000
REPEATS = 5
LONG_RUNS = (200_000, 1_000_000)
LONG_REPEATS = 3
REFERENCE_CALLS = 20_000  # torch and tensorboardX in the long-run table: per call, fewer calls


def writers() -> dict[str, type]:
    from tallyboard import SummaryWriter
    from tensorboardX import SummaryWriter as XWriter
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    return {"tallyboard": SummaryWriter, "torch": TorchWriter, "tensorboardX": XWriter}


def end_to_end(cls: type, n: int = N) -> float:
    w = cls(fresh_dir("scalar"))

    def body() -> None:
        add = w.add_scalar
        for i in range(n):
            add("loss", 0.5, i)
        w.close()

    return timed_per_call(n, body)


ROTATION = ("loss", "lr", "accuracy/top1")


def end_to_end_rotation(cls: type, n: int) -> float:
    """Like :func:`end_to_end`, with three tags logged in turn at each step (a common loop)."""
    w = cls(fresh_dir("scalar3"))

    def body() -> None:
        add = w.add_scalar
        for i in range(n // 3):
            for tag in ROTATION:
                add(tag, 0.5, i)
        w.close()

    return timed_per_call(n // 3 * 3, body)


def long_runs(ws: dict[str, type], sizes: tuple[int, ...], repeats: int) -> None:
    """Floor, tallyboard, torch and tensorboardX interleaved in each repeat (same load for all)."""
    refs = [name for name in ("torch", "tensorboardX") if name in ws]
    print(
        f"\n## add_scalar end to end incl. close, long runs (median of {repeats}, interleaved; "
        f"torch/tensorboardX: {REFERENCE_CALLS:,} calls, per call)"
    )
    print(
        f"{'calls':>10} {'floor':>9} {'tallyboard':>10} {'vs floor':>9} "
        + " ".join(f"{name:>12} {'ratio':>7}" for name in refs)
    )
    for n in sizes:
        runs: dict[str, list[float]] = {name: [] for name in ("floor", "tallyboard", *refs)}
        for _ in range(repeats):
            runs["floor"].append(end_to_end(FloorWriter, n))
            runs["tallyboard"].append(end_to_end(ws["tallyboard"], n))
            for name in refs:
                runs[name].append(end_to_end(ws[name], REFERENCE_CALLS))
        med = {name: statistics.median(times) for name, times in runs.items()}
        ours = med["tallyboard"]
        line = f"{n:>10,} {med['floor']:7.2f}us {ours:8.2f}us {ours / med['floor']:8.2f}x "
        line += " ".join(f"{med[name]:10.1f}us {med[name] / ours:6.1f}x" for name in refs)
        print(line, flush=True)
    n = sizes[0]
    floor, ours = [], []
    for _ in range(repeats):
        floor.append(end_to_end_rotation(FloorWriter, n))
        ours.append(end_to_end_rotation(ws["tallyboard"], n))
    f, o = statistics.median(floor), statistics.median(ours)
    print(f"{n:>10,} {f:7.2f}us {o:8.2f}us {o / f:8.2f}x  (3 tags in turn: {', '.join(ROTATION)})")


_RSS_SCALARS = """
import sys
sys.path.insert(0, {bench!r})
from tallyboard import SummaryWriter
from floor_writer import FloorWriter
cls = FloorWriter if {floor!r} else SummaryWriter
w = cls({log_dir!r})
w.add_scalar("loss", 0.5, 0)
def hwm():  # peak resident set of this process, KiB (reset by exec, unlike ru_maxrss)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
base = hwm()
add = w.add_scalar
for i in range({n}):
    add("loss", 0.5, i)
w.close()
print(base, hwm())
"""

_RSS_IMAGES = """
import time
import numpy as np
from tallyboard import SummaryWriter
from tallyboard.records import storage

class StalledFile(storage.LocalAppendFile):
    def write(self, data):
        time.sleep({stall})  # a disk that blocks on every write
        super().write(data)

storage.LocalAppendFile = StalledFile
if {noise!r}:
    image = np.random.default_rng(0).integers(0, 256, 3 * {side} * {side}, dtype=np.uint8)
else:
    image = (np.arange(3 * {side} * {side}, dtype=np.uint32) % 251).astype(np.uint8)
image = image.reshape(3, {side}, {side})
w = SummaryWriter({log_dir!r})
w.add_image("warm", image, 0)
w.flush()
def hwm():  # peak resident set of this process, KiB (reset by exec, unlike ru_maxrss)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
base = hwm()
t0 = time.perf_counter()
for i in range({n}):
    w.add_image("x", image, i)
w.close()
print(base, hwm(), time.perf_counter() - t0)
"""


def _run_rss(code: str) -> list[float]:
    out = subprocess.check_output([sys.executable, "-c", code], timeout=600).decode().split()
    return [float(x) for x in out]


def peak_rss() -> None:
    """Peak RSS above the process's level after warm-up, each case in a fresh process."""
    bench = os.path.dirname(os.path.abspath(__file__))
    print("\n## peak RSS (fresh process each; growth over the level after the first call)")
    for label, floor in (("tallyboard", False), ("floor (keeps every record)", True)):
        base, peak = _run_rss(
            _RSS_SCALARS.format(bench=bench, floor=floor, log_dir=fresh_dir("rss"), n=1_000_000)
        )
        print(
            f"1,000,000 scalars, {label}: +{(peak - base) / 1024:,.1f} MiB (peak {peak / 1024:,.0f} MiB)"
        )
    side = 1024
    for label, noise, n in (("a ramp, deflated", False, 1000), ("noise, stored", True, 300)):
        base, peak, seconds = _run_rss(
            _RSS_IMAGES.format(
                stall=0.05, side=side, log_dir=fresh_dir("rss-img"), n=n, noise=noise
            )
        )
        print(
            f"{n:,} images 3x{side}x{side} uint8 ({label}; "
            f"{3 * side * side * n / 2**30:.1f} GiB of pixels), every write stalled 50 ms: "
            f"+{(peak - base) / 1024:,.1f} MiB (peak {peak / 1024:,.0f} MiB; "
            f"pending-bytes limit 64 MiB; {seconds:.1f} s)"
        )


def long_latencies(n: int = 1_000_000, runs: int = 3) -> None:
    """The whole cost over a long run, every call timed: end to end incl. close, then the
    caller's mean, median, p99, p99.9 (and max), tallyboard and the floor interleaved."""
    from tallyboard import SummaryWriter

    print(f"\n## add_scalar, {n:,} calls, {runs} runs interleaved (every call timed)")
    print(f"{'':28} {COST_HEADER}")
    for run in range(runs):
        for label, cls in (("tallyboard", SummaryWriter), ("floor", FloorWriter)):
            cost = timed_loop(
                lambda c=cls: c(fresh_dir("lat-long")), lambda w, i: w.add_scalar("loss", 0.5, i), n
            )
            print(f"{label + f' (run {run + 1})':28} {cost.line()}", flush=True)


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
        "import time; t=time.perf_counter(); import tallyboard; print((time.perf_counter()-t)*1000)"
    )
    runs = [
        float(subprocess.check_output([sys.executable, "-c", code]).decode())
        for _ in range(repeats)
    ]
    return statistics.median(runs)


def heavy_modules_after_import() -> list[str]:
    code = (
        "import sys, tallyboard; print(' '.join(m for m in ('PIL', 'matplotlib', 'torch', "
        "'google.protobuf.descriptor_pb2', 'soundfile', 'numpy') if m in sys.modules))"
    )
    return subprocess.check_output([sys.executable, "-c", code]).decode().split()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    warnings.simplefilter("ignore")
    if "--rss" in argv:
        peak_rss()
        return
    ws = writers()
    long_runs(ws, LONG_RUNS[:1] if quick else LONG_RUNS, 2 if quick else LONG_REPEATS)
    if not quick:
        peak_rss()
        long_latencies()
    e2e = {name: median_of(REPEATS, lambda c=cls: end_to_end(c)) for name, cls in ws.items()}
    lat = {name: latencies(cls) for name, cls in ws.items()}
    rows = [
        (f"add_scalar end to end incl. close (n={N}) vs torch", e2e["tallyboard"], e2e["torch"]),
        (
            "add_scalar end to end incl. close vs tensorboardX",
            e2e["tallyboard"],
            e2e["tensorboardX"],
        ),
        ("caller p50 latency vs torch", lat["tallyboard"][0], lat["torch"][0]),
        ("caller p99 latency vs torch", lat["tallyboard"][1], lat["torch"][1]),
        ("caller p99 latency vs tensorboardX", lat["tallyboard"][1], lat["tensorboardX"][1]),
    ]
    print_table(f"add_scalar (median of {REPEATS} runs)", rows)
    mem = {name: peak_memory_kib(cls) for name, cls in ws.items()}
    print(
        "\npeak Python memory while logging 200,000 scalars flat out: "
        + ", ".join(f"{name} {kib:,.0f} KiB" for name, kib in mem.items())
    )
    print(
        f"\nimport tallyboard: {import_time_ms():.1f} ms (median of 7 fresh processes); "
        f"heavy modules loaded by it: {heavy_modules_after_import() or 'none'}"
    )


if __name__ == "__main__":
    main()
