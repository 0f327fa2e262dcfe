"""The road of one value through a :class:`~tallyboard.faces.summary_writer.SummaryWriter`.

Every ``add_*`` method ends in :meth:`ValueRoad.emit` (or :meth:`ValueRoad.emit_deferred` for a
value still on a device): the tag, step and wall time are checked in the caller, then
:meth:`ValueRoad.emit` hands the payload along each sink's route (built by
:class:`~tallyboard.faces.sink_router.SinkRouter`), the one place that tells the ways apart. Which
``emit`` a writer has depends on its rank (:meth:`ValueRoad._route_emit`): as is, checks only
(a rank that writes nothing), rank-tagged (``ranks="all"``), or buffered for a reduction across
ranks (``reduce=``) that :meth:`ValueRoad.sync` writes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tallyboard.faces.sink_router import PENDING, ROW, Route, RouteKey, SinkRouter, size_hint
from tallyboard.plugin.registry import Registry
from tallyboard.plugin.sinks import Deferred
from tallyboard.ranks import reduce as distributed
from tallyboard.values import (
    Pending,
    PendingFloat,
    check_step,
    check_tag,
    check_walltime,
    defer_device,
    on_device,
)

_now = __import__("time").time
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_valid_tags: set[str] = set()


class ValueRoad:
    """A writer's value road: :meth:`emit`, :meth:`emit_deferred`, :meth:`add_value` and the
    rank binding of ``emit`` (:meth:`sync`, :meth:`rank_sync`)."""

    if TYPE_CHECKING:  # set by the writer (SummaryWriter._setup, WriterLifecycle._open)
        _plan: distributed.RankPlan
        _rank_sync: distributed.RankSync | None
        _sync_timeout: float
        _registry: Registry
        _router: SinkRouter
        _routes: dict[RouteKey, list[Route]]
        _closed: bool

        def _open(self) -> None: ...

    @property
    def writes(self) -> bool:
        """Whether this writer writes: False on a rank that only checks calls (``ranks="zero"`` on a
        non-zero rank, ``write_to_disk=False``) and in a DataLoader worker process.
        """
        return self._plan.writes

    def _route_emit(self) -> None:
        """Bind ``emit`` for this rank: as is, validation only, rank-tagged, or into the reduction."""
        self.__dict__.pop("emit", None)
        if not self._plan.writes:
            self.emit = _check_only  # type: ignore[method-assign]
        elif self._plan.suffix:
            self.emit = functools.partial(_emit_tagged, self, self._plan.suffix)  # type: ignore[method-assign]
        if self._rank_sync is not None:
            self.emit = functools.partial(_emit_reduced, self, self.emit)  # type: ignore[method-assign]

    def rank_sync(self) -> distributed.RankSync:
        """The buffer of values this writer reduces across ranks at :meth:`sync` (made on demand).

        Used by :class:`~tallyboard.monitor.TensorboardEventHandler` with ``across_ranks=True``;
        most code never calls it.

        Returns:
            The writer's :class:`~tallyboard.ranks.reduce.RankSync`.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/rank_sync") as writer:
            ...     print(type(writer.rank_sync()).__name__)
            RankSync
        """
        if self._rank_sync is None:
            self._rank_sync = distributed.RankSync(None, self._sync_timeout)
        return self._rank_sync

    def sync(self) -> None:
        """Reduce the values buffered since the last sync across ranks; rank 0 writes them.

        Only with ``reduce=`` (or a Stat handler with ``across_ranks=True``); otherwise it does
        nothing. Every rank must call it the same number of times (:meth:`flush` and :meth:`close`
        do): it costs one ``all_reduce`` of one number and one ``gather``, however many values.

        Raises:
            tallyboard.ranks.reduce.RankSyncError: A rank did not arrive within ``sync_timeout``
            seconds (no later sync is tried), the ranks synced different writers at once, or a
            launcher says there are several ranks but torch.distributed has no process group.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/sync", reduce="mean") as writer:  # one process: rank 0
            ...     writer.add_scalar("loss", 0.5, 0)
            ...     writer.sync()  # the mean over ranks of step 0's loss is written now
        """
        if self._rank_sync is None:
            return
        points = self._rank_sync.run()
        if self._plan.writes:
            for kind, tag, step, value, wall in points:
                ValueRoad.emit(self, kind, tag, value, step, wall)

    def emit(
        self,
        kind: str,
        tag: str,
        payload: Any,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Send one checked payload of ``kind`` to every sink: where every ``add_*`` method ends.

        For plugin authors: a kind's method converts its input into its payload, then calls this;
        each sink gets the payload through the encoder registered for (kind, sink), now or, for a
        heavy kind, on the writer's thread. A sink with no encoder for the kind is skipped with one
        warning. Users call :meth:`add_value` instead.

        Args:
            kind: A registered kind's name, such as ``"scalar"``.
            tag: The tag, a str.
            payload: What the kind's ``convert`` returns (already checked).
            global_step: An int within int64, or None (no step). Default ``None``.
            walltime: Seconds since the epoch, finite, or None (now). Default ``None``.

        Raises:
            TypeError: ``tag`` is not a str, ``global_step`` not an int.
            ValueError: ``global_step`` outside int64, ``walltime`` not finite; an unknown kind.
            OSError: A sink failed to write (with ``sink_errors="raise"``).

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/emit") as writer:
            ...     writer.emit("scalar", "loss", 0.25, 0)  # what add_scalar("loss", 0.25, 0) does
        """
        # _checked's lines, written out: the call would cost add_scalar ~150 ns of its 1.4 us
        if type(tag) is not str or tag not in _valid_tags:
            tag = check_tag(tag)
            if len(_valid_tags) < 100_000:
                _valid_tags.add(tag)
        if global_step is not None and (
            type(global_step) is not int or not _INT64_MIN <= global_step <= _INT64_MAX
        ):
            global_step = check_step(global_step)
        walltime = _now() if walltime is None else check_walltime(walltime)
        if self._closed:
            self._open()
        try:
            routes = self._routes[kind]
        except KeyError:
            routes = self._router.route(kind)
        failures = None
        for encode, write, mode in routes:  # the one place the three ways are told apart
            try:
                if mode is ROW:
                    write((encode, tag, global_step, walltime, payload))
                elif mode:
                    write(
                        Deferred(encode, (tag, global_step, walltime, payload), size_hint(payload))
                    )
                else:
                    write(encode(tag, global_step, walltime, payload))
            except Exception as exc:  # the other sinks still get the value
                if failures is None:
                    failures = [((encode, write, mode), exc)]
                else:
                    failures.append(((encode, write, mode), exc))
        if failures is not None:
            self._router.report(failures, (tag, global_step, walltime, payload))

    def emit_deferred(
        self,
        kind: str,
        tag: str,
        payload: Pending,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """:meth:`emit` for a payload still on its way from a device (a ``jax.Array``, a CUDA
        tensor): the call checks tag, step and wall time (``None`` is now) and queues the
        payload; each sink's writer thread materialises it (``payload.result()``, see
        ``tallyboard.values.Pending``) and encodes it, in the order of the calls. A failure to
        make it is raised by a later call, as a sink's write error is.

        On a rank that writes nothing it only checks. Where the tag is reduced across ranks
        (``reduce=``) every rank keeps a number (a :class:`~tallyboard.values.PendingFloat`)
        until :meth:`sync`, which makes it; any other payload is made in the call.
        """
        try:
            tag, global_step, wall = _checked(tag, global_step, walltime)
        except BaseException:
            payload.drop()  # refused: nothing is left pending
            raise
        payload.label = (tag, global_step)  # named if the value is lost (values.DeviceValueLost)
        sync = self._rank_sync
        if sync is not None and (op := sync.op_for(tag)) is not None:
            if type(payload) is PendingFloat:  # every rank adds it, writing or not: made at sync()
                sync.add_deferred(kind, tag, op, global_step, payload, wall)
            else:  # what emit does with it (a float is reduced, anything else written as is)
                self.emit(kind, tag, payload.result(), global_step, wall)
            return
        plan = self._plan
        if not plan.writes:
            payload.drop()
            return
        if plan.suffix:
            self.emit(kind, tag, payload.result(), global_step, wall)
            return
        # emit's loop along the routes of a value still on a device, which are all deferred:
        # written out here (the checks are done) because right after a step is dispatched each
        # line of the call costs: through emit, write_scalars took 8-11 us more (docs/jax.md)
        value = (tag, global_step, wall, payload)
        if self._closed:
            self._open()
        try:
            routes = self._routes[kind, PENDING]
        except KeyError:
            routes = self._router.route((kind, PENDING))
        failures: list[tuple[Route, Exception]] = []
        for route in routes:
            try:
                route[1](Deferred(route[0], value, payload.nbytes))
            except Exception as exc:  # the other sinks still get the value
                failures.append((route, exc))
        if failures:
            self._router.report(failures, value)

    def add_value(
        self, kind: str, tag: str, value: Any, global_step: Any = None, walltime: Any = None
    ) -> None:
        """Log ``value`` as data kind ``kind``: any kind by name, including those of other plugins.

        ``writer.add_value("histogram", "w", values, 3)`` does what ``writer.add_histogram("w",
        values, 3)`` does; a third-party plugin's kind needs no method of its own. ``tallyboard
        plugins`` lists the installed kinds. The value takes the form the kind's ``convert``
        accepts: for the built-in kinds, what the ``add_*`` method takes as its value.

        Args:
            kind: The kind's name: ``"scalar"``, ``"histogram"``, ``"image"``, ``"text"``,
                ``"audio"``, ``"tensor"``, ``"pr_curve"``, ``"mesh"``, ... or a plugin's.
            tag: The tag, a str.
            value: The value to log.
            global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
            walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

        Raises:
            ValueError: No installed plugin provides ``kind`` (the message lists those that do), or
                the value is out of range for it.
            TypeError: The value has the wrong type for the kind.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/add_value") as writer:
            ...     writer.add_value("scalar", "lr", 0.1, global_step=0)
            ...     writer.add_value("histogram", "weights", np.random.randn(100), 0)
        """
        k = self._registry.kind(kind)
        if k.log is not None:
            k.log(self, tag, value, global_step, walltime)
        elif on_device(value):  # a device value: converted on the writer's side
            (pending,) = defer_device(k.convert, [value])
            self.emit_deferred(k.name, tag, pending, global_step, walltime)
        else:
            self.emit(k.name, tag, k.convert(value), global_step, walltime)


def _check_only(
    kind: str, tag: Any, payload: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """``emit`` on a rank that writes nothing: the same checks, then nothing (no file, no folder)."""
    _checked(tag, global_step, walltime)


def _checked(tag: Any, global_step: Any, walltime: Any) -> tuple[str, int | None, float]:
    """``emit``'s checks: the tag, step and wall time as written (``check_tag``'s,
    ``check_step``'s, now for ``None``); a tag checked once is remembered, so the common call
    costs three comparisons."""
    if type(tag) is not str or tag not in _valid_tags:
        tag = check_tag(tag)
        if len(_valid_tags) < 100_000:
            _valid_tags.add(tag)
    if global_step is not None and (
        type(global_step) is not int or not _INT64_MIN <= global_step <= _INT64_MAX
    ):
        global_step = check_step(global_step)
    return tag, global_step, _now() if walltime is None else check_walltime(walltime)


def _emit_tagged(
    writer: ValueRoad,
    suffix: str,
    kind: str,
    tag: Any,
    payload: Any,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """``emit`` with the rank in the tag (``ranks="all"``)."""
    ValueRoad.emit(writer, kind, check_tag(tag) + suffix, payload, global_step, walltime)


def _emit_reduced(
    writer: ValueRoad,
    emit: Callable[..., None],
    kind: str,
    tag: Any,
    payload: Any,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """``emit`` that queues plain numbers of reduced tags for :meth:`ValueRoad.sync`."""
    sync = writer._rank_sync
    op = sync.op_for(tag) if sync is not None and type(tag) is str else None
    if op is None or type(payload) is not float:
        emit(kind, tag, payload, global_step, walltime)
        return
    check_tag(tag)
    sync.add(kind, tag, op, check_step(global_step), payload, check_walltime(walltime))  # type: ignore[union-attr]
