"""``tallyboard board LOGDIR`` and ``tallyboard serve LOGDIR``: TensorBoard over tallyboard's readers.

``board`` starts the data provider (:mod:`tallyboard.board`) on loopback and TensorBoard's web
frontend pointed at it (``--grpc_data_provider``; with a local log dir also ``--logdir``, so the
projector still reads its files), prints the URL, and stops both on Ctrl-C, on SIGTERM or when
either dies (TensorBoard is also told to die with this process, on Linux). ``serve`` runs the
provider alone, for a TensorBoard started elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from typing import Any

from tallyboard import paths
from tallyboard.board import options
from tallyboard.board.options import DEFAULT_DEADLINE, DEFAULT_HOST, DEFAULT_RELOAD
from tallyboard.extras import MissingExtra, require

#: Defaults of the ports (also shown in their help); the provider's own defaults and checks are
#: :mod:`tallyboard.board.options`' (light: nothing heavy is imported before TensorBoard starts).
BOARD_PORT, SERVE_PORT, HOST = 6006, 6806, DEFAULT_HOST
RELOAD, DEADLINE = DEFAULT_RELOAD, DEFAULT_DEADLINE
#: Seconds TensorBoard gets to start answering, and to stop once asked.
TB_START, TB_STOP = 120.0, 10.0
#: Environment variable giving TensorBoard other seconds than :data:`TB_STOP` to stop.
STOP_WAIT_ENV = "TALLYBOARD_BOARD_STOP_WAIT"
#: Seconds the provider gives requests in flight, and then a pass under way, when stopping
#: (requests waiting for the first load are answered at once; a pass still reading is left).
STOP_GRACE = 0.5


class _Stop(Exception):
    """SIGTERM arrived: stop as on Ctrl-C."""


def _checked(check: Any, text: str, parse: Any, **kw: Any) -> Any:
    """``check(parse(text))`` (the text itself when it does not parse), its error for argparse."""
    try:
        value = parse(text)
    except ValueError:
        value = text
    try:
        return check(value, **kw)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _reload(text: str) -> float:
    return float(_checked(options.seconds, text, float, zero_ok=True))


def _deadline(text: str) -> float:
    return float(_checked(options.seconds, text, float))


def _port(text: str) -> int:
    return int(_checked(options.port, text, int))


def _samples(text: str) -> dict[str, int]:
    from tallyboard.board.store import parse_samples

    try:
        return parse_samples(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _provider_options(p: Any) -> None:
    p.add_argument(
        "--reload",
        type=_reload,
        default=RELOAD,
        metavar="SECS",
        help=f"seconds between reads of what is new (default {RELOAD:g}; 0 reads once); a "
        "local log dir's changes are read at once, at most once per interval",
    )
    p.add_argument(
        "--samples-per-plugin",
        type=_samples,
        default={},
        metavar="PLUGIN=N,...",
        help="points kept per series by plugin, e.g. scalars=5000,images=all (default: 1000 "
        "scalars, 100 tensors, 10 images/audio per series, as RustBoard; 0 or all keeps all)",
    )
    p.add_argument(
        "--deadline",
        type=_deadline,
        default=DEADLINE,
        metavar="SECS",
        help=f"seconds a call to the store may take (default {DEADLINE:g})",
    )


def add_parsers(sub: Any) -> None:
    """Add ``board`` and ``serve`` to the ``tallyboard`` subparsers."""
    p = sub.add_parser(
        "board",
        help="TensorBoard over any log dir tallyboard reads (event files, MindSpore, CSV, "
        "JSONL, S3 ...), live",
        description="Start tallyboard's data provider and TensorBoard's web frontend on it. "
        "Options not listed here go to TensorBoard as they are (--window_title=NAME).",
    )
    p.add_argument("logdir", help="log dir: a local path or an fsspec URL (s3://bucket/runs)")
    p.add_argument(
        "--port",
        type=_port,
        default=BOARD_PORT,
        help=f"TensorBoard's port (default {BOARD_PORT}; 0: a free one, printed with the URL)",
    )
    p.add_argument(
        "--host",
        default=HOST,
        help=f"address TensorBoard listens on (default {HOST}; anything else shows your runs "
        "to the network: a warning says so)",
    )
    _provider_options(p)
    p = sub.add_parser(
        "serve",
        help="only the data provider, for `tensorboard --grpc_data_provider HOST:PORT`",
    )
    p.add_argument("logdir", help="log dir: a local path or an fsspec URL (s3://bucket/runs)")
    p.add_argument(
        "--port", type=_port, default=SERVE_PORT, help=f"port (default {SERVE_PORT}; 0: a free one)"
    )
    p.add_argument(
        "--host",
        default=HOST,
        help=f"address to listen on (default {HOST}; anything else lets the network read "
        "your runs: a warning says so)",
    )
    _provider_options(p)


def _fail(command: str, message: str) -> int:
    print(f"tallyboard {command}: {message}", file=sys.stderr)
    return 1


def _missing(command: str, load: bool) -> str | None:
    """Why the provider cannot run here (grpcio or TensorBoard missing or broken), or None.
    ``load=False`` only looks for the packages (``board`` starts TensorBoard before importing
    anything heavy; a package that is there but broken is found when the provider starts)."""
    import importlib.util

    for module, what in [("grpc", "grpcio"), ("tensorboard", "TensorBoard")]:
        try:
            if not load:
                if importlib.util.find_spec(module) is None:
                    raise ModuleNotFoundError(f"No module named {module!r}", name=module)
                continue
            require(module, "board", f"tallyboard {command}")
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return str(MissingExtra(_extra_message(command, module)))
            return _broken(what, exc)
        except ImportError as exc:  # there, but it does not import
            return _broken(what, exc)
    return None


def _extra_message(command: str, module: str) -> str:
    return (
        f"tallyboard {command} needs {module}, which is not installed: "
        'pip install "tallyboard[board]" (from a checkout: pip install ".[board]")'
    )


def _broken(what: str, exc: BaseException) -> str:
    return f'{what} is not installed or does not import ({exc}): pip install "tallyboard[board]"'


def _start_provider(args: Any, command: str, host: str, port: int) -> Any:
    """The running provider (its warnings, such as a host that is not loopback, are printed
    by :func:`_log_to_stderr`'s hook, one line each)."""
    from tallyboard.board import serve

    return serve(
        args.logdir,
        port=port,
        host=host,
        reload=args.reload,
        samples=args.samples_per_plugin,
        deadline=args.deadline,
    )


def _log_to_stderr(command: str) -> None:
    """The provider's log and every Python warning of this process go to stderr as one line
    each, named after ``command`` (never a warning's file, line and source line)."""
    import logging

    logger = logging.getLogger("tallyboard.board")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"tallyboard {command}: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False

    def one_line(message: Any, category: type[Warning], *rest: Any, **kw: Any) -> None:
        what = "" if category is UserWarning else f"{category.__name__}: "
        text = " ".join(str(message).split("\n"))
        print(f"tallyboard {command}: warning: {what}{text}", file=sys.stderr, flush=True)

    warnings.showwarning = one_line


@contextlib.contextmanager
def _sigterm_stops() -> Any:
    """SIGTERM raises :class:`_Stop` in the main thread while inside."""

    def handler(signum: int, frame: Any) -> None:
        raise _Stop

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _stopping() -> Any:
    """While stopping (bounded in time), a second Ctrl-C or SIGTERM is not an error: ignored,
    so the stop finishes and no traceback is printed (``timeout -s INT`` and a shell may each
    send one)."""
    old = (
        signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])


def cmd_serve(args: Any) -> int:
    """``tallyboard serve``: the provider until Ctrl-C or SIGTERM."""
    _log_to_stderr("serve")
    server = None
    try:  # Ctrl-C or SIGTERM at any moment, while importing and starting too, stops quietly
        with _sigterm_stops():
            missing = _missing("serve", load=True)
            if missing:
                return _fail("serve", missing)
            try:
                server = _start_provider(args, "serve", args.host, args.port)
            except (OSError, ValueError, TypeError) as exc:
                return _fail("serve", str(exc))
            print(
                f"tallyboard serve: {args.logdir} at {server.address} "
                f"(tensorboard --grpc_data_provider {server.address}); Ctrl-C stops",
                file=sys.stderr,
                flush=True,
            )
            threading.Event().wait()
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        if server is not None:
            with _stopping():
                server.stop(grace=STOP_GRACE, wait=STOP_GRACE)
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _answers(url: str) -> bool:
    import urllib.request  # here: ``serve`` never asks, and it costs tens of ms to import

    try:
        with urllib.request.urlopen(url + "data/environment", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _ask_to_stop(proc: subprocess.Popen[bytes]) -> float:
    """SIGTERM to TensorBoard's process group (when it runs); when it was asked, for
    :func:`_stop`."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    return time.monotonic()


def stop_wait() -> float:
    """Seconds TensorBoard gets to exit once asked: :data:`TB_STOP`, or what the environment
    variable :data:`STOP_WAIT_ENV` says.

    Raises:
        ValueError: the variable is set to something else than a number of seconds > 0.
    """
    text = os.environ.get(STOP_WAIT_ENV, "")
    if not text:
        return TB_STOP
    try:
        return options.seconds(float(text))
    except ValueError:
        raise ValueError(
            f"{STOP_WAIT_ENV} must be a number of seconds > 0, got {text[:40]!r}"
        ) from None


def _stop(proc: subprocess.Popen[bytes], asked: float | None = None) -> int:
    """Stop TensorBoard: asked now (or at ``asked``, by :func:`_ask_to_stop`), killed when it
    has not exited :func:`stop_wait` seconds after; its exit status."""
    if proc.poll() is None:
        if asked is None:
            asked = _ask_to_stop(proc)
        wait = stop_wait()  # checked before TensorBoard started
        try:
            proc.wait(max(0.0, asked + wait - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(
                f"tallyboard board: TensorBoard had not exited {wait:g} s after SIGTERM: killed",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode or 0


def tensorboard_command(
    logdir: str, provider: str, host: str, port: int, extra: list[str]
) -> list[str]:
    """TensorBoard's command line on the provider at ``provider`` (``host:port``)."""
    cmd = [sys.executable, "-m", "tensorboard.main", "--grpc_data_provider", provider]
    if not paths.is_url(logdir):
        cmd += ["--logdir", os.path.abspath(logdir)]  # the projector reads its files itself
    return [*cmd, "--host", host, "--port", str(port), *extra]


def cmd_board(args: Any, extra: list[str]) -> int:
    """``tallyboard board``: the provider and TensorBoard, until Ctrl-C or either stops."""
    _log_to_stderr("board")
    # serve() refuses such a log dir too, but only after TensorBoard has started: say it first
    if not paths.is_url(args.logdir) and not os.path.isdir(args.logdir):
        return _fail("board", f"logdir {args.logdir!r} is not a directory")
    missing = _missing("board", load=False)
    if missing:
        return _fail("board", missing)
    try:
        stop_wait()
    except ValueError as exc:
        return _fail("board", str(exc))
    provider_port = _free_port()
    cmd = tensorboard_command(
        args.logdir, f"{HOST}:{provider_port}", args.host, args.port or _free_port(), extra
    )
    port = int(cmd[cmd.index("--port") + 1])
    # TensorBoard starts first, before this process runs any thread (the provider's), so the
    # hook that ties its life to ours runs safely between fork and exec.
    proc = subprocess.Popen(
        cmd,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )
    from tallyboard.board.server import is_loopback

    if not is_loopback(args.host):
        print(
            f"tallyboard board: warning: TensorBoard listens on {args.host}, not loopback: "
            f"anyone who can reach this machine can see every run under {args.logdir}",
            file=sys.stderr,
        )
    server = None
    try:
        with _sigterm_stops():
            try:
                server = _start_provider(args, "board", HOST, provider_port)
            except ImportError as exc:  # TensorBoard or grpcio there, but broken
                _stop(proc)
                return _fail("board", _broken("TensorBoard or grpcio", exc))
            except (OSError, ValueError, TypeError) as exc:
                _stop(proc)
                return _fail("board", str(exc))
            shown = "localhost" if args.host in ("127.0.0.1", "::1") else args.host
            url = f"http://{shown}:{port}/"
            deadline = time.monotonic() + TB_START
            while proc.poll() is None and not _answers(f"http://{_dial(args.host)}:{port}/"):
                if time.monotonic() > deadline:
                    _stop(proc)
                    return _fail("board", f"TensorBoard did not answer at {url} in {TB_START:g} s")
                time.sleep(0.2)
            if proc.poll() is not None:
                return _fail("board", f"TensorBoard exited with status {proc.returncode}")
            print(
                f"tallyboard board: TensorBoard at {url} ({args.logdir} through the provider "
                f"at {server.address}); Ctrl-C stops both",
                file=sys.stderr,
                flush=True,
            )
            code = proc.wait()
            return _fail("board", f"TensorBoard exited with status {code}") if code else 0
    except (KeyboardInterrupt, _Stop):
        return 0
    finally:  # TensorBoard and the provider stop side by side: Ctrl-C waits for the slower
        with _stopping():
            asked = _ask_to_stop(proc)
            if server is not None:
                server.stop(grace=STOP_GRACE, wait=STOP_GRACE)
            _stop(proc, asked)


def _dial(host: str) -> str:
    """Where to reach a server listening on ``host`` from here."""
    if host in ("0.0.0.0", "", "::"):
        return HOST
    return f"[{host}]" if ":" in host else host


def dispatch(args: Any, extra: list[str]) -> int:
    """Run ``board`` or ``serve``."""
    if args.command == "board":
        return cmd_board(args, extra)
    return cmd_serve(args)
