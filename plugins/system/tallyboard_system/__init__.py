"""System metrics: a background sampler that feeds ``tallyboard.monitor`` Stats.

``SystemMetrics(interval=1.0)`` samples, on a thread of its own, the process's CPU use and
memory, the host's CPU, memory, disk and network I/O (psutil) and, where NVML answers, each
GPU's utilisation, memory, power and temperature (nvidia-ml-py, imported lazily; no GPU or no
driver: those stats are simply absent). Every value goes through a :class:`tallyboard.monitor.Stat`,
so the registered event handlers receive it like any Stat event; a
:class:`~tallyboard.monitor.TensorboardEventHandler` writes ``system/host/cpu_percent.value`` ...::

    handle = register_event_handler(TensorboardEventHandler(writer))
    with SystemMetrics(interval=1.0):
        train()

By default each sample is its own event (aggregation ``VALUE``); ``window=60.0`` instead emits
one event per 60 s window with ``aggregations`` (``MEAN`` and ``MAX`` by default).

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

from tallyboard.monitor import MAX, MEAN, VALUE, Aggregation, Stat
from tallyboard.values import check_positive_number

__all__ = ["SystemMetrics"]

_MIB = 1024.0 * 1024.0
#: Longest ``stop()`` waits for the sampler thread beyond one sample, in seconds.
STOP_TIMEOUT = 10.0


class SystemMetrics:
    """Sample system metrics every ``interval`` seconds on a background thread into Stats.

    ``prefix`` starts every Stat name; ``process``, ``host`` and ``gpu`` switch those groups
    off. ``start()``/``stop()`` or use it as a context manager; ``stop()`` emits what the
    current windows hold, and raises the first error a sample met (an event handler failing,
    say), after sampling went on regardless.
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
        """Start sampling (one sample now, then every ``interval``); returns self."""
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

    def _sample(self) -> dict[str, float]:
        """Take one sample now and add it to the Stats; returns ``{stat name: value}``."""
        values: dict[str, float] = {}
        for sampler in self._samplers:
            values.update(sampler())
        first: Exception | None = None
        for name, value in values.items():
            try:
                self._stat(name).add(value)
            except Exception as exc:  # a handler failed: every other Stat still gets its value
                first = first or exc
        self.samples += 1
        self.last = values
        if first is not None:
            raise first
        return values

    def _loop(self) -> None:
        next_at = time.monotonic()
        while True:
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
            if self._stop.wait(next_at - now):
                return


def _rate(
    name: str, now: float, count: float, last: dict[str, tuple[float, float]]
) -> float | None:
    """Per-second rate of a counter since its previous reading (None on the first)."""
    previous = last.get(name)
    last[name] = (now, count)
    if previous is None or now <= previous[0]:
        return None
    return max(0.0, count - previous[1]) / (now - previous[0])


def _process_sampler(psutil: Any, base: str) -> Callable[[], list[tuple[str, float]]]:
    proc = psutil.Process()
    proc.cpu_percent(None)  # the first reading only sets the reference point

    def sample() -> list[tuple[str, float]]:
        with proc.oneshot():
            memory = proc.memory_info()
            return [
                (base + "/cpu_percent", proc.cpu_percent(None)),
                (base + "/rss_mib", memory.rss / _MIB),
                (base + "/threads", float(proc.num_threads())),
            ]

    return sample


def _host_sampler(psutil: Any, base: str) -> Callable[[], list[tuple[str, float]]]:
    psutil.cpu_percent(None)
    last: dict[str, tuple[float, float]] = {}

    def counters(
        out: list[tuple[str, float]], now: float, pairs: Iterable[tuple[str, float]]
    ) -> None:
        for name, count in pairs:
            rate = _rate(name, now, count, last)
            if rate is not None:
                out.append((base + name, rate))

    def sample() -> list[tuple[str, float]]:
        memory = psutil.virtual_memory()
        out = [
            (base + "/cpu_percent", psutil.cpu_percent(None)),
            (base + "/memory_used_percent", float(memory.percent)),
            (base + "/memory_available_mib", memory.available / _MIB),
        ]
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
