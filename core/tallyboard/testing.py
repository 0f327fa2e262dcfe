"""Test helpers for plugin authors: opt-in pytest fixtures.

Enable them in a ``conftest.py`` (or a test module)::

    pytest_plugins = ["tallyboard.testing"]

Fixtures:

- ``tallyboard_registry``: a freshly built registry, rebuilt again after the test.
- ``register_plugin``: ``register_plugin(module_or_object, name=...)`` registers a plugin for
  this test only (as if installed) and returns the fresh registry.
- ``memory_sink``: a sink called ``"memory"`` that records every record of every kind, as the
  writer hands it over; ``SummaryWriter(dir, sinks=["memory"])`` writes into it.
- ``ingest_server``: an HTTP server on 127.0.0.1 that takes JSON POSTs, for testing a network
  sink (:class:`IngestServer`): its ``url``, what it ``received``, and ``statuses`` to answer
  with (a 500 to make the sink retry, a 401 to make it refuse).

:class:`MemorySink`, :class:`MemoryPlugin` and :class:`IngestServer` work without pytest too.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tallyboard.plugin.hookspecs import hookimpl
from tallyboard.plugin.registry import (
    Registry,
    add_plugin,
    get_registry,
    remove_plugin,
    reset_registry,
)
from tallyboard.plugin.sinks import Deferred, SinkOptions, SinkSpec

MEMORY_SINK = "memory"


@dataclass(frozen=True)
class Record:
    """One record a :class:`MemorySink` received: the payload as the kind produced it."""

    kind: str
    tag: str
    step: int | None
    wall_time: float
    payload: Any


class MemorySink:
    """A sink that keeps every record in a list (``records``), per writer directory."""

    def __init__(self, options: SinkOptions, store: MemoryPlugin) -> None:
        self.log_dir = options.log_dir
        self.options = options
        self.records: list[Record] = []
        self.flushes = 0
        self.closed = False
        self._store = store

    def write(self, data: Record | Deferred) -> None:
        """Keep ``data`` (a :class:`Deferred` is resolved here, in the caller's thread).

        Raises:
            ValueError: the sink was closed.
        """
        if self.closed:
            raise ValueError(f"write to closed memory sink for {self.log_dir}")
        self.records.append(data if isinstance(data, Record) else data())

    def flush(self) -> None:
        """Count the flush (``flushes``); everything written is already kept."""
        self.flushes += 1

    def close(self) -> None:
        """Mark the sink closed (``closed``); the records stay readable."""
        self.closed = True


def encode_any(kind: str, tag: str, step: int | None, wall_time: float, payload: Any) -> Record:
    """The memory sink's encoder of every kind (registered for kind ``"*"``)."""
    return Record(kind, tag, step, wall_time, payload)


class MemoryPlugin:
    """A plugin contributing the ``memory`` sink; it remembers every sink it opened."""

    def __init__(self, name: str = MEMORY_SINK) -> None:
        self.name = name
        self.sinks: list[MemorySink] = []
        self._lock = threading.Lock()

    def _open(self, options: SinkOptions) -> MemorySink:
        sink = MemorySink(options, self)
        with self._lock:
            self.sinks.append(sink)
        return sink

    @hookimpl
    def register_sinks(self, register: Callable[[Any], None]) -> None:
        """Register the memory sink under this plugin's name."""
        register(
            SinkSpec(name=self.name, open=self._open, description="records kept in memory (tests)")
        )

    @hookimpl
    def register_encoders(self, register: Callable[[str, str, Callable[..., Any]], None]) -> None:
        """Register :func:`encode_any` for every kind (``"*"``) into the memory sink."""
        register("*", self.name, encode_any)

    @property
    def records(self) -> list[Record]:
        """Every record of every sink opened so far, in the order the sinks were opened."""
        return list(itertools.chain.from_iterable(s.records for s in self.sinks))

    def records_for(self, log_dir: str) -> list[Record]:
        """The records written to ``log_dir`` (a sub-run is its own directory)."""
        return [r for s in self.sinks if s.log_dir == str(log_dir) for r in s.records]

    def values(self, tag: str) -> list[tuple[int | None, Any]]:
        """``(step, payload)`` of every record with ``tag``."""
        return [(r.step, r.payload) for r in self.records if r.tag == tag]


class IngestServer:
    """An HTTP server on 127.0.0.1 that records what a network sink sends, to test it against.

    Every request (``POST``, ``PUT``) is answered, whatever its body: with the next status of
    :attr:`statuses` (200 once it is empty). Bodies answered 2xx are kept as they came
    (:attr:`bodies`, any format: JSON, InfluxDB line protocol, protobuf), with their path and
    query (:attr:`paths`) and headers; a body that is JSON is also kept parsed
    (:attr:`received`). Use it as a context manager (or the ``ingest_server`` fixture): it serves
    on its own thread until the block ends.

    Attributes:
        url: ``http://127.0.0.1:<port>/ingest`` (any path is served; ``url`` is one).
        statuses: The next answers, in order (say ``[500, 503]``: two failures, then 200s).
        attempts: ``(time.monotonic(), status)`` of every request, each answered so.
        bodies: The raw bodies (bytes) answered 2xx, in arrival order.
        paths: The path and query of each of those requests (``/api/v2/write?bucket=b``).
        headers: The headers of each of those requests.
        received: Of those bodies, the ones that are JSON, parsed, in arrival order.
    """

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.statuses: list[int] = []
        self.attempts: list[tuple[float, int]] = []
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        self.received: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self.cond = threading.Condition()
        ingest = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                import time

                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                with ingest.cond:  # nothing here raises: every request is answered below
                    status = ingest.statuses.pop(0) if ingest.statuses else 200
                    ingest.attempts.append((time.monotonic(), status))
                    if status < 300:
                        ingest.bodies.append(body)
                        ingest.paths.append(self.path)
                        ingest.headers.append(dict(self.headers))
                        parsed = _json_or_none(body)
                        if parsed is not None:
                            ingest.received.append(parsed)
                    ingest.cond.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_PUT = do_POST  # noqa: N815 - http.server's name

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ingest"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def lines(self) -> list[str]:
        """Every line of every body received, decoded as UTF-8 (a line-protocol sink's points)."""
        with self.cond:
            return [line for body in self.bodies for line in body.decode().splitlines() if line]

    def records(self) -> list[tuple[Any, Any]]:
        """Every record received, as ``(body["run"], record)`` for bodies shaped
        ``{"run": ..., "records": [...]}`` (the example webhook's)."""
        with self.cond:
            return [(body["run"], r) for body in self.received for r in body["records"]]

    def wait_for(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait until ``done()`` (called under the server's lock) is true.

        Raises:
            AssertionError: It was not within ``timeout`` seconds.
        """
        with self.cond:
            assert self.cond.wait_for(done, timeout), "the server did not get what was expected"

    def __enter__(self) -> IngestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json_or_none(body: bytes) -> Any:
    """``body`` parsed as JSON, or None when it is not JSON."""
    import json

    try:
        return json.loads(body)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both are
        return None


try:
    import pytest
except ImportError:  # pragma: no cover - the fixtures need pytest; the classes do not
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def tallyboard_registry() -> Iterator[Registry]:
        """A registry built fresh for this test (and forgotten after it)."""
        reset_registry()
        try:
            yield get_registry()
        finally:
            reset_registry()

    @pytest.fixture
    def register_plugin() -> Iterator[Callable[..., Registry]]:
        """``register_plugin(plugin, name=None)``: register a plugin until the test ends."""
        names: list[str] = []

        def register(plugin: Any, name: str | None = None) -> Registry:
            name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
            add_plugin(plugin, name)
            names.append(name)
            return get_registry()

        try:
            yield register
        finally:
            for name in names:
                remove_plugin(name)

    @pytest.fixture
    def memory_sink() -> Iterator[MemoryPlugin]:
        """The ``memory`` sink, registered for this test: ``sinks=["memory"]`` writes into it."""
        plugin = MemoryPlugin()
        name = f"tallyboard.testing:{plugin.name}"
        add_plugin(plugin, name)
        try:
            yield plugin
        finally:
            remove_plugin(name)

    @pytest.fixture
    def ingest_server() -> Iterator[IngestServer]:
        """An :class:`IngestServer` on 127.0.0.1 for this test."""
        with IngestServer() as server:
            yield server
