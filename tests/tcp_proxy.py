"""A TCP forwarder on 127.0.0.1 between a client and a server (moto's S3), for tests that count,
log or stall what crosses it."""

from __future__ import annotations

import socket
import threading


class Forwarder:
    """Forwards every connection made to ``port`` to ``upstream``; subclasses look at the bytes
    with :meth:`seen` (``outgoing`` is client to server) before they are passed on."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def seen(self, data: bytes, outgoing: bool) -> None:
        """Called with each chunk before it is forwarded (may block to stall the link)."""

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:  # the server is gone (the test is ending)
                client.close()
                continue
            self._open += [client, upstream]
            for src, dst, outgoing in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, outgoing), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outgoing: bool) -> None:
        try:
            while data := src.recv(65536):
                self.seen(data, outgoing)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):  # the other side sees the end, as it would without us
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._server.close()
        for s in self._open:
            s.close()
