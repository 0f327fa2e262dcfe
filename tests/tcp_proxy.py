"""A TCP forwarder on 127.0.0.1 between a client and a server (moto's S3, MLflow), for tests that
count, log, stall or cut what crosses it, and moto's S3 server behind one."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any, TypeVar


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
        """Stop listening and end every open connection; shut down first, since closing a
        socket does not wake a thread blocked in its ``accept`` or ``recv``."""
        for s in (self._server, *self._open):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self._open = []


class Outage(Forwarder):
    """A forwarder that can be cut, as when the server behind it dies: its port refuses new
    connections and the open ones are reset (:meth:`cut`); :meth:`restore` listens on the same
    port again, as the server started again would. The server itself stays up."""

    def cut(self) -> None:
        self.close()

    def restore(self) -> None:
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()


P = TypeVar("P", bound=Forwarder)


@contextlib.contextmanager
def moto_s3_behind(proxy_type: type[P], monkeypatch: Any) -> Iterator[tuple[P, str]]:
    """moto's S3 server on 127.0.0.1 behind a ``proxy_type`` forwarder, test credentials in the
    environment (through ``monkeypatch``): the proxy and the endpoint URL that goes through it.
    Both are stopped at the end."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    proxy = proxy_type(server.get_host_and_port())
    try:
        yield proxy, f"http://127.0.0.1:{proxy.port}"
    finally:
        proxy.close()
        server.stop()


@contextlib.contextmanager
def s3fs_through(proxy_type: type[P], monkeypatch: Any, bucket: str) -> Iterator[tuple[Any, P]]:
    """:func:`moto_s3_behind`, with fsspec's ``s3`` protocol set to reach it and ``bucket``
    made: the filesystem and the proxy."""
    import fsspec
    import s3fs

    with moto_s3_behind(proxy_type, monkeypatch) as (proxy, endpoint):
        conf = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
        monkeypatch.setitem(fsspec.config.conf, "s3", conf)
        s3fs.S3FileSystem.clear_instance_cache()
        fs = fsspec.filesystem("s3")
        fs.mkdir(bucket)
        try:
            yield fs, proxy
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
