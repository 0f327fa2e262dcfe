"""A tiny HTTP server on 127.0.0.1 that takes JSON POSTs, for tests of network sinks."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Ingest:
    """Records every POST (path, headers, JSON body, when); answers each with the next status of
    :attr:`statuses` (200 once it is empty). Only bodies answered 2xx count as received."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.attempts: list[tuple[float, int]] = []  # (monotonic time, status answered)
        self.received: list[dict[str, Any]] = []  # bodies answered 2xx
        self.headers: list[dict[str, str]] = []
        self.cond = threading.Condition()
        ingest = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with ingest.cond:
                    status = ingest.statuses.pop(0) if ingest.statuses else 200
                    ingest.attempts.append((time.monotonic(), status))
                    if status < 300:
                        ingest.received.append(json.loads(body))
                        ingest.headers.append(dict(self.headers))
                    ingest.cond.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ingest"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def records(self) -> list[tuple[str, dict[str, Any]]]:
        """Every record received, as ``(run, record)`` in arrival order."""
        with self.cond:
            return [(body["run"], r) for body in self.received for r in body["records"]]

    def wait_for(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        with self.cond:
            assert self.cond.wait_for(done, timeout), "the server did not get what was expected"


@contextmanager
def ingest_server() -> Iterator[Ingest]:
    server = Ingest()
    server._thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
