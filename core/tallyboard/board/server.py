"""The data provider as a running server: the gRPC service plus the loader's thread."""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from tallyboard import paths
from tallyboard.board import options
from tallyboard.board.loader import Loader, is_not_a_directory
from tallyboard.board.options import DEFAULT_DEADLINE, DEFAULT_HOST, DEFAULT_RELOAD
from tallyboard.board.store import DEFAULT_SAMPLES, Sampling, Store
from tallyboard.reading.incremental import Reader
from tallyboard.warn import warn

log = logging.getLogger("tallyboard.board")

#: Threads answering requests.
WORKERS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _reader(logdir: str, deadline: float) -> Reader | None:
    """The log dir's reader, made now so that a log dir that is not a directory is refused in
    the call, as ``Reader()`` refuses it; None when a store did not answer (the loader tries
    again each pass, and requests get the failure's status meanwhile)."""
    try:
        return Reader(logdir, workers=1, deadline=deadline, summaries=True)
    except OSError as exc:
        if is_not_a_directory(exc) or not paths.is_url(logdir):
            raise
        log.debug("%s: %s (tried again by the loader)", logdir, exc)
        return None


class BoardServer:
    """TensorBoard's data provider over ``logdir``, listening on ``host:port``.

    Use :func:`serve` to make one. ``address`` is what ``tensorboard --grpc_data_provider``
    takes. :meth:`stop` (or leaving the ``with`` block) stops serving and loading.
    """

    def __init__(
        self,
        logdir: str,
        host: str,
        port: int,
        reload: float,
        samples: Mapping[str, int] | None,
        deadline: float,
        follow: bool = True,
    ) -> None:
        from concurrent import futures

        import grpc
        from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

        from tallyboard.board.service import MAX_REQUEST, Servicer

        self.logdir = logdir
        self.reload = reload
        self.follow = follow
        self.store = Store(Sampling(dict(samples or {}), dict(DEFAULT_SAMPLES)))
        self.loader = Loader(logdir, self.store, deadline)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="tallyboard-board"),
            options=[
                ("grpc.max_send_message_length", -1),
                ("grpc.max_receive_message_length", MAX_REQUEST),
                ("grpc.so_reuseport", 0),
            ],
        )
        pb_grpc.add_TensorBoardDataProviderServicer_to_server(
            Servicer(self.store, self.loader, logdir, deadline), self._server
        )
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            self.port = self._server.add_insecure_port(where)
        except RuntimeError as exc:  # grpc's message names no port
            raise OSError(f"cannot listen on {where}: {exc}") from None
        if not self.port:
            raise OSError(f"cannot listen on {where} (in use, or not an address of this machine)")
        self.host = host
        # listening first: TensorBoard's first GetExperiment (answered at once) finds the port
        # open, or its channel would wait a second or more before it tries again
        self._server.start()
        try:
            self.loader.set_reader(_reader(logdir, deadline))
        except BaseException:
            self._server.stop(None)
            raise
        self._thread = threading.Thread(
            target=self._load, name="tallyboard-board-loader", daemon=True
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """``host:port`` for ``tensorboard --grpc_data_provider``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def _load(self) -> None:
        try:
            self.loader.run(self.reload, self.follow)
        except Exception as exc:  # the service goes on with what was loaded; say why, in a line
            log.error("loading %s stopped: %s: %s", self.logdir, type(exc).__name__, exc)

    def wait_loaded(self, timeout: float = 60.0) -> bool:
        """Read what is new now and wait until it is served (a pass started after this call
        has finished). For scripts and tests: a running server reads every ``reload`` seconds
        by itself.

        Args:
            timeout: Seconds to wait at most.

        Returns:
            True when that pass listed the log dir and read it; False after ``timeout``
            seconds, or when the pass failed or stalled (why: ``loader.problems``, and the
            ``tallyboard.board`` log).
        """
        return self.loader.wait_fresh(timeout)

    def stop(self, grace: float = 1.0, wait: float = 5.0) -> None:
        """Stop answering and stop loading. Requests waiting for the first load are answered
        ``UNAVAILABLE`` at once; others in flight get ``grace`` seconds. A pass under way stops
        at its next window, and nothing more goes into the store once it has; one that has
        not reached it ``wait`` seconds later (stuck in a call to the store, or reading a
        window) is left behind, said in the log (it is a daemon thread: it never holds up the
        process's exit)."""
        self.loader.stop(0)  # first: it releases the requests waiting for the first load
        self._server.stop(grace).wait()
        if not self.loader.stop(wait):
            log.info(
                "a pass over %s was still reading %g s after stop(): left behind", self.logdir, wait
            )
        self._thread.join(timeout=wait)

    def __enter__(self) -> BoardServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(
    logdir: str | os.PathLike[str],
    *,
    port: int = 0,
    host: str = DEFAULT_HOST,
    reload: float = DEFAULT_RELOAD,
    samples: Mapping[str, int] | None = None,
    deadline: float = DEFAULT_DEADLINE,
    follow: bool = True,
) -> BoardServer:
    """Serve ``logdir`` (a path or fsspec URL) to TensorBoard as its gRPC data provider.

    The log dir is read by the installed reader plugins (event files, MindSpore summaries,
    CSV, JSONL, any third-party reader), again every ``reload`` seconds, only what is new.
    Start TensorBoard with ``--grpc_data_provider`` set to the returned server's ``address``.

    Args:
        logdir: Local directory or fsspec URL (``s3://bucket/runs``) holding the runs.
        port: TCP port; 0 picks a free one (see ``BoardServer.port``).
        host: Address to listen on. Anything but loopback lets other machines read your
            runs: a warning says so.
        reload: Seconds between passes over the log dir (0: load once).
        samples: Points kept per series by plugin name (``{"scalars": 500}``, 0 keeps all);
            others keep 1,000 scalars, 100 tensors or 10 blob sequences, as RustBoard.
        deadline: Seconds a call to the store may take before it counts as failed, and that
            a request waits for the first listing of the log dir.
        follow: On a local log dir (Linux), read what the kernel says changed at once
            instead of at the next reload (at most one such read per ``reload`` seconds).
            False: read only every ``reload`` seconds.

    Returns:
        The running :class:`BoardServer` (a context manager; ``stop()`` ends it).

    Raises:
        TypeError: ``logdir`` or ``host`` is not a non-empty str, or a number is not a number.
        ValueError: a number is out of range, or ``samples`` is malformed.
        NotADirectoryError: ``logdir`` is not a directory: the error ``tallyboard.Reader()``
            raises for it, with its message (a ``ValueError`` from a reader that predates it).
        OSError: the address cannot be listened on, or a local ``logdir`` cannot be read. A
            store that does not answer is no error here: the passes try it again, and
            requests get its status meanwhile.

    Example:
        >>> with serve("runs", reload=0) as server:  # doctest: +SKIP
        ...     print(server.address)
    """
    if isinstance(logdir, os.PathLike):
        logdir = os.fspath(logdir)
    if not isinstance(logdir, str) or not logdir:
        raise TypeError(f"logdir must be a non-empty str path, os.PathLike or URL, got {logdir!r}")
    if not isinstance(host, str) or not host:
        raise TypeError(f"host must be a non-empty str, got {host!r}")
    if not isinstance(follow, bool):
        raise TypeError(f"follow must be a bool, got {follow!r}")
    port = options.port(port, "port")
    reload = options.seconds(reload, "reload", zero_ok=True)
    deadline = options.seconds(deadline, "deadline")
    counts_ok = isinstance(samples, Mapping) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in samples.items()
    )
    if samples is not None and not counts_ok:
        raise ValueError(f"samples must map plugin names to counts >= 0, got {samples!r}")
    if not is_loopback(host):
        warn(
            f"the data provider listens on {host}, not loopback: anyone who can reach this "
            f"machine can read every run under {logdir}",
            UserWarning,
        )
    return BoardServer(logdir, host, port, reload, samples, deadline, follow)
