"""System metrics: a background sampler that writes scalars or feeds ``tallyboard.monitor`` Stats.

``SystemMetrics(interval=1.0, writer=writer, step=trainer)`` samples, on a thread of its own, the process's CPU use and
memory, the host's CPU, memory, disk and network I/O (psutil) and, where NVML answers, each
GPU's utilisation, memory, power and temperature (nvidia-ml-py, imported lazily; no GPU or no
driver: those stats are simply absent). With ``writer`` every sample is written as scalars
``system/host/cpu_percent``, ``system/process/rss_mib``, ... at the training step ``step``
gives (a callable returning the step, or an object with a ``global_step`` such as Lightning's
``Trainer`` or transformers' ``TrainerState``; none: the sample's index), so they line up with
the training curves::

    with SystemMetrics(interval=1.0, writer=writer, step=lambda: global_step):
        train()

Without ``writer`` every value goes through a :class:`tallyboard.monitor.Stat`, so the
registered event handlers receive it like any Stat event (a
:class:`~tallyboard.monitor.TensorboardEventHandler` names it ``<stat>.value``); each sample is
its own event (aggregation ``VALUE``), or ``window=60.0`` emits one event per 60 s window with
``aggregations`` (``MEAN`` and ``MAX`` by default).

CPU use is a rate: the counters are read once at ``start()`` and the first sample comes one
``interval`` later (a CPU reading over less than 0.1 s is left out of a sample, never shown as
a spike); ``stop()`` takes a last sample.

Ranks (``tallyboard.ranks.discovery.current()``): in a job of several processes every rank samples its own
process (``system/rank<R>/process/...``) while only local rank 0 samples what the host shares
(``system/rank<R>/host/...`` and ``system/rank<R>/gpu<i>/...`` for every GPU NVML sees), so a
host's CPU, disks and GPUs are logged once, under the rank that sampled them. A single process
logs ``system/process/...``, ``system/host/...`` and ``system/gpu<i>/...``.
Needs ``pip install tallyboard[system]``.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import numpy as np
from tallyboard.monitor import MAX, MEAN, VALUE, Aggregation, Stat
from tallyboard.values import check_positive_number

__all__ = ["SystemMetrics"]

_MIB = 1024.0 * 1024.0
#: Shortest time a CPU reading is measured over; a shorter one is left out of the sample.
MIN_CPU_WINDOW = 0.1
#: Longest ``stop()`` waits for the sampler thread beyond one sample, in seconds.
STOP_TIMEOUT = 10.0


class SystemMetrics:
    """Sample system metrics every ``interval`` seconds on a background thread into Stats.

    ``prefix`` starts every name; ``process``, ``host`` and ``gpu`` switch those groups off.
    ``writer`` (anything with ``add_scalar``) takes the samples as scalars at the step ``step``
    gives; without it they go to Stats. ``start()``/``stop()`` or use it as a context manager;
    ``stop()`` takes a last sample, emits what the current windows hold, and raises the first
    error a sample met (a handler or the writer failing, say), after sampling went on
    regardless.
    """

    def __init__(
        self,
        interval: float = 1.0,
        *,
        window: float | None = None,
        aggregations: Iterable[Aggregation] = (MEAN, MAX),
        prefix: str = "system",
        process: bool = True,
        host: bool = True,
        gpu: bool = True,
        writer: Any = None,
        step: Any = None,
    ) -> None:
        self.interval = check_positive_number(interval, "interval")
        if window is not None:
            window = check_positive_number(window, "window")
            if window < self.interval:
                raise ValueError(
                    f"window must be at least interval ({self.interval} s), got {window}"
                )
        self.window = window
        self.aggregations = tuple(aggregations)
        if not self.aggregations or not all(type(a) is Aggregation for a in self.aggregations):
            raise TypeError(f"aggregations must be Aggregation members, got {aggregations!r}")
        if not isinstance(prefix, str) or not prefix:
            raise TypeError(f"prefix must be a non-empty str, got {prefix!r}")
        self.prefix = prefix.rstrip("/")
        if writer is not None and not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(f"writer must have an add_scalar method, got {type(writer).__name__}")
        if writer is not None and window is not None:
            raise ValueError("window aggregates Stats; with writer= every sample is written")
        if step is not None and not callable(step) and not hasattr(step, "global_step"):
            raise TypeError(
                "step must be a callable returning the step or an object with a global_step, "
                f"got {type(step).__name__}"
            )
        self.writer = writer
        self._step_source = step
        self._want = {"process": bool(process), "host": bool(host), "gpu": bool(gpu)}
        self._stats: dict[str, Stat] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._samplers: list[Callable[[], Iterable[tuple[str, float]]]] = []
        self._nvml: Any = None
        self.samples = 0  #: samples taken so far
        self.last: dict[str, float] = {}  #: the latest sample, ``{stat name: value}``
        self.sample_seconds = 0.0  #: thread CPU time spent sampling and logging

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> SystemMetrics:
        """Start sampling (counters read now, a sample every ``interval``); returns self."""
        if self._thread is not None:
            raise RuntimeError("SystemMetrics is already running; stop() it first")
        self._setup()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tallyboard-system", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling, emit what the open windows hold; raises a sample's first error."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(self.interval + STOP_TIMEOUT)
        if thread.is_alive():
            raise TimeoutError(f"the system metrics thread did not stop in {STOP_TIMEOUT} s")
        errors: list[BaseException] = []
        started = time.thread_time()
        try:
            self._sample()  # the last stretch, up to now
        except Exception as exc:
            errors.append(exc)
        self.sample_seconds += time.thread_time() - started
        for stat in self._stats.values():
            try:
                stat.close()
            except Exception as exc:
                errors.append(exc)
        self._stats = {}
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None
        error, self._error = self._error, None
        if error is not None:
            raise error
        if errors:
            raise errors[0]

    @property
    def running(self) -> bool:
        return self._thread is not None

    def __enter__(self) -> SystemMetrics:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- sampling ----------------------------------------------------------------------------

    def _setup(self) -> None:
        import psutil
        from tallyboard.ranks import discovery as ranks

        info = ranks.current()
        base = self.prefix if info.world_size == 1 else f"{self.prefix}/rank{info.rank}"
        self._samplers = []
        if self._want["process"]:
            self._samplers.append(_process_sampler(psutil, base + "/process"))
        if info.local_rank == 0:
            if self._want["host"]:
                self._samplers.append(_host_sampler(psutil, base + "/host"))
            if self._want["gpu"]:
                self._nvml = _nvml()
                if self._nvml is not None:
                    try:
                        self._samplers.append(_gpu_sampler(self._nvml, base))
                    except self._nvml.NVMLError:  # a GPU NVML counts but cannot open: none
                        self._nvml.nvmlShutdown()
                        self._nvml = None

    def _stat(self, name: str) -> Stat:
        stat = self._stats.get(name)
        if stat is None:
            if self.window is None:  # one event per sample, emitted at once
                stat = Stat(name, [VALUE], timedelta(milliseconds=1), max_samples=1)
            else:
                stat = Stat(name, list(self.aggregations), timedelta(seconds=self.window))
            self._stats[name] = stat
        return stat

    def _step(self) -> int:
        """The step of the sample being written: from ``step``, else the sample's index."""
        source = self._step_source
        if source is None:
            return self.samples
        value = source() if callable(source) else source.global_step
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"the step source gave {value!r}, not an int")
        return int(value)

    def _sample(self) -> dict[str, float]:
        """Take one sample now and write it (or add it to the Stats); returns ``{name: value}``."""
        values: dict[str, float] = {}
        for sampler in self._samplers:
            values.update(sampler())
        first: Exception | None = None
        if self.writer is not None:
            try:
                step, wall = self._step(), time.time()
                for name, value in values.items():
                    self.writer.add_scalar(name, value, step, walltime=wall)
            except Exception as exc:
                first = exc
        else:
            for name, value in values.items():
                try:
                    self._stat(name).add(value)
                except Exception as exc:  # a handler failed: every other Stat still gets it
                    first = first or exc
        self.samples += 1
        self.last = values
        if first is not None:
            raise first
        return values

    def _loop(self) -> None:
        next_at = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            started = time.thread_time()
            try:
                self._sample()
            except Exception as exc:  # keep sampling; stop() raises the first error
                if self._error is None:
                    self._error = exc
                    warnings.warn(
                        f"system metrics: a sample failed ({exc!r}); sampling goes on",
                        RuntimeWarning,
                        stacklevel=1,
                    )
            self.sample_seconds += time.thread_time() - started
            next_at += self.interval
            now = time.monotonic()
            if next_at < now:  # fell behind (suspended, overloaded): skip, do not burst
                next_at = now + self.interval


def _rate(
    name: str, now: float, count: float, last: dict[str, tuple[float, float]]
) -> float | None:
    """Per-second rate of a counter since its previous reading (None on the first)."""
    previous = last.get(name)
    last[name] = (now, count)
    if previous is None or now <= previous[0]:
        return None
    return max(0.0, count - previous[1]) / (now - previous[0])


class _CpuPercent:
    """CPU use in % over the time since the previous reading of its own counters (psutil's
    module-wide ``cpu_percent`` state is shared with every other caller, so it is not used).
    ``read()`` is None while less than :data:`MIN_CPU_WINDOW` has passed."""

    def __init__(self, busy_and_total: Callable[[], tuple[float, float]]) -> None:
        self._read = busy_and_total
        self._last = busy_and_total()

    def read(self) -> float | None:
        busy, total = self._read()
        last_busy, last_total = self._last
        if total - last_total < MIN_CPU_WINDOW:
            return None  # too short to measure: the next reading covers a longer stretch
        self._last = (busy, total)
        return max(0.0, 100.0 * (busy - last_busy) / (total - last_total))


def _process_sampler(psutil: Any, base: str) -> Callable[[], list[tuple[str, float]]]:
    proc = psutil.Process()

    def busy_and_wall() -> tuple[float, float]:
        times = proc.cpu_times()
        return times.user + times.system, time.monotonic()

    cpu = _CpuPercent(busy_and_wall)

    def sample() -> list[tuple[str, float]]:
        with proc.oneshot():
            memory = proc.memory_info()
            out = [
                (base + "/rss_mib", memory.rss / _MIB),
                (base + "/threads", float(proc.num_threads())),
            ]
        percent = cpu.read()
        if percent is not None:
            out.insert(0, (base + "/cpu_percent", percent))
        return out

    return sample


def _host_busy_and_total(psutil: Any) -> tuple[float, float]:
    """The CPUs' busy and total seconds, per CPU (idle and I/O wait are not busy; guest time is
    already counted in user time, so it is left out of the total)."""
    times = psutil.cpu_times()
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    busy = total - times.idle - getattr(times, "iowait", 0.0)
    cpus = psutil.cpu_count() or 1
    return busy / cpus, total / cpus


def _host_sampler(psutil: Any, base: str) -> Callable[[], list[tuple[str, float]]]:
    cpu = _CpuPercent(lambda: _host_busy_and_total(psutil))
    last: dict[str, tuple[float, float]] = {}

    def counters(
        out: list[tuple[str, float]], now: float, pairs: Iterable[tuple[str, float]]
    ) -> None:
        for name, count in pairs:
            rate = _rate(name, now, count, last)
            if rate is not None:
                out.append((base + name, rate))

    def io(out: list[tuple[str, float]]) -> None:
        now = time.monotonic()
        disk = psutil.disk_io_counters()
        if disk is not None:  # None where the kernel exposes no disk statistics
            counters(
                out,
                now,
                (
                    ("/disk_read_mib_per_s", disk.read_bytes / _MIB),
                    ("/disk_write_mib_per_s", disk.write_bytes / _MIB),
                ),
            )
        net = psutil.net_io_counters()
        if net is not None:
            counters(
                out,
                now,
                (
                    ("/net_recv_mib_per_s", net.bytes_recv / _MIB),
                    ("/net_sent_mib_per_s", net.bytes_sent / _MIB),
                ),
            )

    io([])  # the counters' first reading: the first sample has rates too

    def sample() -> list[tuple[str, float]]:
        memory = psutil.virtual_memory()
        out = [
            (base + "/memory_used_percent", float(memory.percent)),
            (base + "/memory_available_mib", memory.available / _MIB),
        ]
        percent = cpu.read()
        if percent is not None:
            out.insert(0, (base + "/cpu_percent", percent))
        io(out)
        return out

    return sample


def _nvml() -> Any:
    """The initialised NVML module, or None where there is no library, driver or GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        if pynvml.nvmlDeviceGetCount() > 0:
            return pynvml
    except Exception:
        pass
    try:
        pynvml.nvmlShutdown()
    except Exception:
        pass
    return None


def _gpu_sampler(nvml: Any, base: str) -> Callable[[], list[tuple[str, float]]]:
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    def sample() -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for i, h in enumerate(handles):
            name = f"{base}/gpu{i}"
            # each reading on its own: a GPU without, say, power readings still reports the rest
            try:
                out.append(
                    (name + "/utilization_percent", nvml.nvmlDeviceGetUtilizationRates(h).gpu)
                )
            except nvml.NVMLError:
                pass
            try:
                memory = nvml.nvmlDeviceGetMemoryInfo(h)
                out.append((name + "/memory_used_mib", memory.used / _MIB))
                out.append((name + "/memory_used_percent", 100.0 * memory.used / memory.total))
            except nvml.NVMLError:
                pass
            try:
                out.append((name + "/power_w", nvml.nvmlDeviceGetPowerUsage(h) / 1000.0))
            except nvml.NVMLError:
                pass
            try:
                temperature = nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)
                out.append((name + "/temperature_c", temperature))
            except nvml.NVMLError:
                pass
        return [(key, float(value)) for key, value in out]

    return sample
