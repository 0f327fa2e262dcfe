"""TensorBoard's data-provider service (``tensorboard.data.TensorBoardDataProvider``) over a store.

Every RPC reads the in-memory :class:`~tallyboard.board.store.Store` the loader fills; none
calls the store of the log dir, so a slow or failing store never holds a request. The corners
of the protocol (``tensorboard/data/proto/data_provider.proto``) kept here:

- ``plugin_filter.plugin_name`` must be set (``INVALID_ARGUMENT`` otherwise);
- a run or tag filter that is absent matches everything, one present with no names matches
  nothing;
- reads need ``downsample`` (``INVALID_ARGUMENT`` when absent or negative; 0 points is 0), and
  a downsampled series always ends with its last point, so ``num_points=1`` is the latest value;
  the other points are RustBoard's seeded uniform sample, drawn the same
  (:mod:`~tallyboard.board.sampling`);
- runs are listed by start time (the wall time of the first event of a run's file, as
  TensorBoard takes it), every run read so far, values or not; the first ``ListRuns`` waits
  only until the first pass has read every run (its values may still be going in);
- a blob key names run, tag, step and index, not a position in memory, so it still finds the
  same blob after any number of reloads (``NOT_FOUND`` once it is gone); a key is parsed
  strictly and bounded (:data:`MAX_BLOB_KEY`), and an error quotes only its start;
- hyper-parameters reach the HPARAMS dashboard as the metadata of the ``hparams`` plugin's
  tensors (TensorBoard's gRPC client never asks for them otherwise).

Requests arriving before the loader's first pass is in wait for it (as long as the loader waits
before it reports a pass stalled, :func:`~tallyboard.board.loader.stall_after`, then they get
what is there), so a page opened at once shows the runs; when the provider stops, they are
answered ``UNAVAILABLE`` at once. While no listing of the log dir has succeeded, a store that refuses or stalls gets ``UNAVAILABLE``, ``PERMISSION_DENIED``,
``NOT_FOUND`` or ``DEADLINE_EXCEEDED`` with the store's message.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc
import numpy as np
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

from tallyboard.board.loader import stall_after
from tallyboard.board.sampling import downsample
from tallyboard.board.store import BLOB_SEQUENCE, SCALAR, TENSOR, Series, Store

#: Bytes of a blob sent in one ``ReadBlobResponse``.
BLOB_CHUNK = 4 << 20


#: Characters of a blob key accepted (a longer one is refused unread): room for a run path
#: and a tag of a few thousand characters each.
MAX_BLOB_KEY = 16 << 10
#: Characters of a request's input quoted in an error message.
QUOTED = 40
#: Seconds a request waits for the first listing beyond the time after which the loader
#: reports it stalled (``stall_after(deadline)``).
REPORT_MARGIN = 1.0
#: Bytes of one request the provider receives (gRPC's default receive limit, set explicitly).
MAX_REQUEST = 4 << 20
#: What the JSON inside a key must be, exactly: two strings, a step that is an int64, an index.
_KEY_JSON = re.compile(
    rb'\[("(?:[^"\\\x00-\x1f]|\\.)*"),("(?:[^"\\\x00-\x1f]|\\.)*"),(-?(?:0|[1-9][0-9]{0,18})),'
    rb"(0|[1-9][0-9]{0,8})\]"
)


def quoted(text: str, limit: int = QUOTED) -> str:
    """``repr`` of ``text``, cut to its first ``limit`` characters with what was left said:
    an error quotes a short prefix of what a client sent, never all of it."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def blob_key(run: str, tag: str, step: int, index: int) -> str:
    """A blob's key: URL-safe base64 (no padding) of ``[run, tag, step, index]`` as JSON."""
    raw = json.dumps([run, tag, int(step), int(index)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def parse_blob_key(key: str) -> tuple[str, str, int, int]:
    """``(run, tag, step, index)`` of a key made by :func:`blob_key`, parsed strictly: at most
    :data:`MAX_BLOB_KEY` characters of URL-safe base64 holding exactly ``[str, str, int, int]``
    (no nesting, no ``true`` for a step, a step in int64 and an index >= 0).

    Raises:
        ValueError: ``key`` is not such a key (the message quotes its start only).
    """
    if len(key) > MAX_BLOB_KEY:
        raise ValueError(
            f"blob key of {len(key):,} characters, more than the {MAX_BLOB_KEY:,} a key of "
            f"this provider has: {quoted(key)}"
        )
    try:
        raw = base64.b64decode(key + "=" * (-len(key) % 4), altchars=b"-_", validate=True)
    except (ValueError, binascii.Error):
        raise ValueError(f"blob key is not URL-safe base64: {quoted(key)}") from None
    found = _KEY_JSON.fullmatch(raw)
    step = int(found[3]) if found else 0
    if found is None or not -(1 << 63) <= step < 1 << 63:
        raise ValueError(
            f"not a blob key of this provider (expected base64 of [run, tag, step, index]): "
            f"{quoted(key)}"
        )
    try:
        run, tag = json.loads(found[1]), json.loads(found[2])
    except ValueError:
        raise ValueError(f"not a blob key of this provider: {quoted(key)}") from None
    return run, tag, step, int(found[4])


class Gate(Protocol):
    """What the service asks of the loader before answering: wait for the first listing."""

    def wait_listed(self, seconds: float) -> bool:
        """True once the first pass is in (or failed) within ``seconds``."""

    def wait_runs(self, seconds: float) -> bool:
        """True once every run of the first listing is listed (values may still be going
        in), or the first pass is in or failed, within ``seconds``."""

    def failure(self) -> tuple[str, str] | None:
        """``(status code name, message)`` when no listing of the log dir ever succeeded, or
        when the provider is stopping (``UNAVAILABLE``: a waiting request is released)."""


def _filter(req: Any) -> tuple[set[str] | None, set[str] | None]:
    """The run and tag names a request keeps (None: all); a present, empty filter keeps none."""
    if not req.HasField("run_tag_filter"):
        return None, None
    rtf = req.run_tag_filter
    runs = set(rtf.runs.names) if rtf.HasField("runs") else None
    tags = set(rtf.tags.names) if rtf.HasField("tags") else None
    return runs, tags


class Servicer(pb_grpc.TensorBoardDataProviderServicer):  # type: ignore[misc]
    """The RPCs, answered from ``store``; ``gate`` holds requests until the first listing."""

    def __init__(self, store: Store, gate: Gate, logdir: str, deadline: float) -> None:
        self.store = store
        self.gate = gate
        self.logdir = logdir
        self.deadline = deadline

    # -- the gate and the filters ------------------------------------------------------------

    def _ready(self, context: Any, runs_only: bool = False) -> None:
        """Wait for the first pass (``runs_only``: until every run it found is listed)."""
        # The loader reports a store stalled after stall_after(deadline): wait a little longer
        # (a second: on a busy machine its thread may take that long to say so).
        wait = self.gate.wait_runs if runs_only else self.gate.wait_listed
        wait(stall_after(self.deadline) + REPORT_MARGIN)
        failed = self.gate.failure()
        if failed is not None:
            code, message = failed
            context.abort(getattr(grpc.StatusCode, code), message)

    def _series(
        self, req: Any, context: Any, data_class: int
    ) -> Iterator[tuple[str, list[tuple[str, Series]]]]:
        """``(run, [(tag, series)])`` matching the request's plugin and filters, runs in order."""
        self._ready(context)
        plugin = req.plugin_filter.plugin_name
        if not plugin:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "must specify non-empty plugin name")
            return
        want_runs, want_tags = _filter(req)
        runs = self.store.runs
        names = sorted(runs) if want_runs is None else sorted(want_runs & set(runs))
        for name in names:
            series = runs[name].series  # tags in the order first logged, as TensorBoard's
            found = [
                (tag, s)
                for tag, s in series.items()
                if (want_tags is None or tag in want_tags)
                and s.data_class == data_class
                and s.plugin == plugin
                and len(s.reservoir.view[0])
            ]
            if found:
                yield name, found

    @staticmethod
    def _num_points(req: Any, context: Any) -> int:
        if not req.HasField("downsample"):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "must specify downsample")
        n = int(req.downsample.num_points)
        if n < 0:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"num_points must be non-negative; got {n}"
            )
        return n

    # -- experiment, plugins, runs -----------------------------------------------------------

    def GetExperiment(self, req: Any, context: Any) -> Any:  # noqa: N802 (the proto's name)
        # Not held for the first pass: TensorBoard asks it before it serves its page, which
        # can then load while the runs are read. The log dir only, as RustBoard and
        # TensorBoard's Python loader answer (no name, description or creation time).
        return pb.GetExperimentResponse(data_location=self.logdir)

    def ListPlugins(self, req: Any, context: Any) -> Any:  # noqa: N802
        self._ready(context)
        names = {
            s.plugin
            for run in self.store.runs.values()
            for s in run.series.values()
            if len(s.reservoir.view[0])
        }
        return pb.ListPluginsResponse(plugins=[pb.Plugin(name=n) for n in sorted(names)])

    def ListRuns(self, req: Any, context: Any) -> Any:  # noqa: N802
        self._ready(context, runs_only=True)
        runs = [
            (r.start_time, r.name) for r in self.store.runs.values() if r.start_time is not None
        ]
        runs.sort()
        return pb.ListRunsResponse(runs=[pb.Run(name=n, start_time=t) for t, n in runs])

    # -- scalars, tensors, blob sequences ----------------------------------------------------

    def _list(
        self, req: Any, context: Any, data_class: int, res: Any, meta: Callable[..., Any]
    ) -> Any:
        for run, found in self._series(req, context, data_class):
            entry = res.runs.add(run_name=run)
            for tag, s in found:
                steps, walls, values = s.reservoir.view
                t = entry.tags.add(tag_name=tag)
                meta(t.metadata, steps, walls, values)
                t.metadata.summary_metadata.CopyFrom(s.metadata)
        return res

    def ListScalars(self, req: Any, context: Any) -> Any:  # noqa: N802
        return self._list(req, context, SCALAR, pb.ListScalarsResponse(), _time_meta)

    def ListTensors(self, req: Any, context: Any) -> Any:  # noqa: N802
        return self._list(req, context, TENSOR, pb.ListTensorsResponse(), _time_meta)

    def ListBlobSequences(self, req: Any, context: Any) -> Any:  # noqa: N802
        return self._list(req, context, BLOB_SEQUENCE, pb.ListBlobSequencesResponse(), _blob_meta)

    def ReadScalars(self, req: Any, context: Any) -> Any:  # noqa: N802
        return self._read_points(req, context, SCALAR, pb.ReadScalarsResponse())

    def ReadTensors(self, req: Any, context: Any) -> Any:  # noqa: N802
        return self._read_points(req, context, TENSOR, pb.ReadTensorsResponse())

    def _read_points(self, req: Any, context: Any, data_class: int, res: Any) -> Any:
        """``res`` filled with the kept points of each asked series of ``data_class``
        (scalars or tensors: steps, wall times and values), downsampled to the request's
        number of points."""
        n = self._num_points(req, context)
        for run, found in self._series(req, context, data_class):
            entry = res.runs.add(run_name=run)
            for tag, s in found:
                steps, walls, values = s.reservoir.view
                pick = downsample(len(steps), n)
                data = entry.tags.add(tag_name=tag).data
                data.step.extend(steps[pick].tolist())
                data.wall_time.extend(walls[pick].tolist())
                data.value.extend(values[pick].tolist())
        return res

    def ReadBlobSequences(self, req: Any, context: Any) -> Any:  # noqa: N802
        n = self._num_points(req, context)
        res = pb.ReadBlobSequencesResponse()
        for run, found in self._series(req, context, BLOB_SEQUENCE):
            entry = res.runs.add(run_name=run)
            for tag, s in found:
                steps, walls, values = s.reservoir.view
                pick = downsample(len(steps), n)
                data = entry.tags.add(tag_name=tag).data
                picked_steps = steps[pick].tolist()
                data.step.extend(picked_steps)
                data.wall_time.extend(walls[pick].tolist())
                for step, blobs in zip(picked_steps, values[pick]):
                    seq = data.values.add()
                    for i in range(len(blobs)):
                        seq.blob_refs.add(blob_key=blob_key(run, tag, step, i))
        return res

    def ReadBlob(self, req: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        try:
            run, tag, step, index = parse_blob_key(req.blob_key)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            return
        got = self.store.runs.get(run)
        series = None if got is None else got.series.get(tag)
        where = f"run {quoted(run)}, tag {quoted(tag)}"
        if series is None or series.data_class != BLOB_SEQUENCE:
            context.abort(grpc.StatusCode.NOT_FOUND, f"{where}: no such blob sequence")
            return
        steps, _, values = series.reservoir.view
        at = int(np.searchsorted(steps, step))
        if at >= len(steps) or steps[at] != step:
            context.abort(grpc.StatusCode.NOT_FOUND, f"{where}: no point at step {step}")
            return
        blobs = values[at]
        if not 0 <= index < len(blobs):
            context.abort(
                grpc.StatusCode.NOT_FOUND, f"{where}, step {step}: no blob {index} of {len(blobs)}"
            )
            return
        blob = blobs[index]
        for start in range(0, max(len(blob), 1), BLOB_CHUNK):
            yield pb.ReadBlobResponse(data=blob[start : start + BLOB_CHUNK])


def _time_meta(meta: Any, steps: Any, walls: Any, values: Any) -> None:
    meta.max_step = int(steps[-1])
    meta.max_wall_time = float(walls.max())


def _blob_meta(meta: Any, steps: Any, walls: Any, values: Any) -> None:
    _time_meta(meta, steps, walls, values)
    meta.max_length = max(len(v) for v in values)
