"""A base class for sinks that send over a network: queue, sender thread, deadline, retries.

A sink that sends to a server must never make training wait on the network, never hang in
``flush()`` or ``close()``, and never lose a value silently. :class:`NetworkSink` does all of
that once; a subclass writes only how one batch is sent::

    class WebhookSink(NetworkSink):
        def __init__(self, options):
            self.url = options.location
            super().__init__(options, where=self.url)  # starts the sender thread: call it last

        def send(self, items):
            ...  # POST them with timeout=self.call_timeout(); raise Refused(...) if the server
            # refuses, any other error retries

What it does:

- ``write`` only queues (a bounded queue: :attr:`NetworkSettings.max_pending` values wait at
  most; beyond that the caller waits for room while the server answers, at most the deadline,
  and a value that finds none is left out and counted).
- A sender thread sends batches of at most :attr:`NetworkSettings.batch_size` values, as soon as
  that many wait, at the latest :attr:`NetworkSettings.send_secs` after the oldest was queued, and
  at once on ``flush()`` or ``close()``. Heavy kinds' :class:`~tallyboard.plugin.sinks.Deferred`
  encodes run there, off the training loop.
- A failed batch (any exception but :class:`Refused`) is sent again, after a pause that doubles
  from :attr:`NetworkSettings.retry_secs` up to :attr:`NetworkSettings.retry_max_secs`; values
  stay queued through an outage. A :class:`Refused` batch is not sent again: the refusal is
  raised as ``OSError`` by the next ``write``, ``flush`` or ``close``.
- ``flush()`` returns once everything written so far was delivered, or when the server is known
  not to answer, or after the deadline; when it returns with values undelivered it says so then
  (one :class:`~tallyboard.warn.SinkWarning` per outage, counting them). ``close()`` sends what is
  queued and calls :meth:`NetworkSink.finish`, then reports what was not delivered in one
  ``SinkWarning`` with its count. It takes at most the deadline, and at most
  :attr:`NetworkSettings.grace_secs` (plus the end of the call on the wire) from the moment the
  server is known not to answer: when ``close()`` began, if a call had failed before, else the
  moment a call made during ``close()`` fails or times out.
- Every network call is bounded: a subclass passes :meth:`NetworkSink.call_timeout` as the
  timeout of each call it makes (and lets its client library retry nothing: this class retries).
  That timeout is the :attr:`NetworkSettings.timeout` setting (else the deadline), the grace
  while the server is known not to answer, and never reaches past the end of a ``close()``
  under way, so ``close()`` waits for the call on the wire to end and no value arrives after
  ``close()`` said it was not sent. A call that outlives its timeout anyway (a client that
  ignores it) is counted in the close message as values the server may have taken
  (:attr:`Outcome.unanswered`).
- With :attr:`~tallyboard.plugin.sinks.SinkOptions.confirm` (``tallyboard sync``), ``flush()``
  raises ``OSError`` unless everything was delivered, and ``close()`` raises instead of warning:
  sync remembers as sent only what a ``flush()`` confirmed.
- Sinks sending to the same place (the same ``where``) share what they know of it: once one
  found it down, the others' ``flush()`` and ``close()`` do not each wait the whole deadline.

Every duration is a setting (:class:`NetworkSettings`), so a user shortens it with
``("webhook+http://host/in", {"deadline": 2})`` and tests keep their waits short.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from tallyboard.plugin.sinks import Deferred, SinkOptions
from tallyboard.warn import SinkWarning, warn

log = logging.getLogger("tallyboard.network")


@dataclass(frozen=True)
class NetworkSettings:
    """The settings every :class:`NetworkSink` takes, beside its name in ``sinks=``.

    A sink with settings of its own subclasses this (``@dataclass(frozen=True)``) and names its
    subclass in ``SinkSpec(settings=...)``.

    Attributes:
        deadline: Seconds ``flush()`` and ``close()`` wait for the server at most, whatever the
            network does. None: the sink's default (:meth:`NetworkSink.default_deadline`).
        max_pending: Values that may wait to be sent; beyond that a ``write`` waits for room
            (while the server answers, at most the deadline), and a value that finds none is
            left out and counted.
        batch_size: Most values handed to one :meth:`NetworkSink.send`; that many waiting wake
            the sender.
        send_secs: Longest a value waits before it is sent. None: the writer's ``flush_secs``,
            10 s at most.
        retry_secs: Pause after a failed send; it doubles after each failure in a row.
        retry_max_secs: Longest pause between two tries.
        grace_secs: What ``close()`` still waits once the server is known not to answer (one
            more try), instead of the rest of the deadline: from the start of ``close()`` when a
            call had failed before it, else from the failure of a call made during ``close()``.
            Also the longest one call may take (:meth:`NetworkSink.call_timeout`) while the
            server is known not to answer.
        timeout: Longest one network call (one request) may take, in seconds. None: the
            deadline. A call that runs out of it fails, is retried, and marks the server as not
            answering, so a ``close()`` that meets a server that never answers takes about
            ``timeout + grace_secs``, not the deadline.
        url: Where the sink sends, for a sink given by its name alone
            (``("webhook", {"url": "http://host/in"})``); a ``sinks=`` entry's own URL
            (``"webhook+http://host/in"``) is :attr:`~tallyboard.plugin.sinks.SinkOptions.location`.
            A sink reads both with :meth:`NetworkSink.url_of`. None: the entry's URL.
    """

    deadline: float | None = None
    max_pending: int = 100_000
    batch_size: int = 1000
    send_secs: float | None = None
    retry_secs: float = 0.5
    retry_max_secs: float = 5.0
    grace_secs: float = 2.0
    timeout: float | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None and not isinstance(self.url, str):
            raise TypeError(f"setting 'url' must be a str, got {type(self.url).__name__}")
        for name in (
            "deadline",
            "send_secs",
            "retry_secs",
            "retry_max_secs",
            "grace_secs",
            "timeout",
        ):
            value = getattr(self, name)
            if value is None and name in ("deadline", "send_secs", "timeout"):
                continue
            if not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value > 0
            ):
                raise ValueError(
                    f"setting {name!r} must be a positive number of seconds, got {value!r}"
                )
        for name in ("max_pending", "batch_size"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"setting {name!r} must be an int of at least 1, got {value!r}")


class Refused(Exception):
    """Raised by :meth:`NetworkSink.send`: the other end answered and refused these values.

    Sending them again cannot help, so they are not retried; the refusal is raised as
    ``OSError`` by the sink's next ``write``, ``flush`` or ``close``. Any other exception from
    ``send`` counts as a network failure, and the batch is sent again.
    """


class Outcome(NamedTuple):
    """What :meth:`NetworkSink.stop` found when the sink closed."""

    #: values accepted and not delivered (refused ones are not counted: they were raised),
    #: ``unanswered`` included.
    unsent: int
    #: True when :meth:`NetworkSink.finish` ran to its end.
    finished: bool
    #: why the server did not take them (the last failure), for messages.
    why: str
    #: a refusal not raised yet.
    error: BaseException | None
    #: of ``unsent``, values sent without an answer: their last try failed in a way that may
    #: have reached the server (:meth:`NetworkSink.may_have_arrived`: a timeout, a connection
    #: cut), or was still running when ``close()`` stopped waiting. They may have arrived, or
    #: arrive still.
    unanswered: int = 0


class _OutOfTime(TimeoutError):
    """Raised by :meth:`NetworkSink.call_timeout`: no time is left for a call (``close()`` gave
    up, or its deadline is reached). Says nothing about the server."""


#: What ``close()`` waits past a call's timeout for the sender thread to see it expire.
_SLACK_SECS = 1.0


class _Place:
    """What the sinks sending to one place know of it."""

    __slots__ = ("offline", "stalled", "told")

    def __init__(self) -> None:
        #: the last network failure, until a success.
        self.offline: BaseException | None = None
        #: a flush or close ran past the deadline without an answer; cleared by a success.
        self.stalled = False
        #: the outage was said (a flush warning); cleared by a success.
        self.told = False

    def down(self) -> bool:
        return self.offline is not None or self.stalled


_places: dict[str, _Place] = {}
_places_lock = threading.Lock()


def _place(where: str) -> _Place:
    with _places_lock:
        place = _places.get(where)
        if place is None:
            place = _places[where] = _Place()
        return place


class NetworkSink:
    """A sink that sends batches from a thread of its own, under a deadline.

    Subclass it, implement :meth:`send` (and, if needed, :meth:`start` and :meth:`finish`), and
    call ``super().__init__(options, where=...)`` at the end of your ``__init__``: the sender
    thread starts there. The writer's calls (``write``, ``flush``, ``close``, ``abandon``) are
    this class's; see the module's documentation for what each promises.

    Args:
        options: What the writer opened the sink with; :attr:`SinkOptions.settings` may be a
            :class:`NetworkSettings` (or a subclass): the defaults are used otherwise.
        where: The place values go (a URL), named in messages; sinks with the same ``where``
            share what they know of it (down or answering).

    Attributes:
        options: The options given.
        settings: The :class:`NetworkSettings` in force.
        where: The place values go.
        name: The sink's name in messages (the ``sinks=`` entry's sink).
        deadline: Seconds ``flush()`` and ``close()`` wait at most.
        confirm: True under ``tallyboard sync``.
        send_secs: Longest a value waits before it is sent.
    """

    def __init__(self, options: SinkOptions, *, where: str) -> None:
        settings = options.settings
        if not isinstance(settings, NetworkSettings):
            settings = NetworkSettings()
        self.options = options
        self.settings = settings
        self.where = str(where)
        text = str(options.extra.get("sink", "")) or type(self).__name__
        self.name = text.split("://", 1)[0].split("+", 1)[0]
        self.deadline = (
            float(settings.deadline) if settings.deadline is not None else self.default_deadline()
        )
        self.confirm = bool(options.confirm or options.extra.get("confirm", False))
        self.send_secs = (
            float(settings.send_secs)
            if settings.send_secs is not None
            else min(float(options.flush_secs), 10.0)
        )
        self._place = _place(self.where)
        self._cond = threading.Condition()
        self._items: list[Any] = []
        self._queued = 0  # values ever accepted by write
        self._delivered = 0
        self._refused = 0
        self._left_out = 0  # values that found the queue full
        self._error: BaseException | None = None  # a refusal, raised by the next call
        self._failing = False  # this sink's last try failed: wait before the next
        self._started = False
        self._finished = False
        self._closing = False
        self._give_up = False
        self._wake = True  # start() at once
        self._trying: list[Any] = []  # the batch the sender thread is sending
        self._sending = False  # the sender thread is inside send()
        self._end_by: float | None = None  # when close() stops waiting (monotonic)
        self._done = False  # the sender thread returned
        self._busy_until = 0.0  # when the last call bounded by call_timeout() ends at the latest
        self._unanswered = 0  # values at the front of _items a failed try may have delivered
        self._thread = threading.Thread(
            target=self._run, name=f"tallyboard-{self.name}-{options.run}", daemon=True
        )
        self._thread.start()

    # -- what a subclass writes ----------------------------------------------------------------

    def send(self, items: list[Any]) -> None:
        """Send one batch (on the sender thread): the encoders' outputs, in write order.

        Args:
            items: At most :attr:`NetworkSettings.batch_size` values, ``Deferred`` encodes
                already run.

        Raises:
            Refused: The server refused them (sending again cannot help).
            Exception: Anything else is a network failure: the batch is sent again later.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement send(items)")

    def start(self) -> None:
        """Prepare the other end before the first batch (on the sender thread): create a run,
        log in. Tried again after a failure, like a batch; does nothing by default."""

    def finish(self) -> None:
        """Conclude at ``close()``, after the last batch (on the sender thread): end a run.
        Tried again after a failure until the deadline; does nothing by default."""

    def default_deadline(self) -> float:
        """The deadline when the user set none: 30 seconds (a sink may read an environment
        variable here)."""
        return 30.0

    def is_refusal(self, exc: BaseException) -> bool:
        """Whether an exception from :meth:`send` means "refused" (not retried); by default
        only :class:`Refused`."""
        return isinstance(exc, Refused)

    def may_have_arrived(self, exc: BaseException) -> bool:
        """Whether a failed :meth:`send` may still have reached the server (a request sent and
        never answered): True unless the exception, or one it was raised from, shows that no
        request left (``ConnectionRefusedError``: nothing listens; ``socket.gaierror``: no
        such host). ``close()`` counts such values apart: they may have arrived."""
        seen: set[int] = set()
        cause: BaseException | None = exc
        while cause is not None and id(cause) not in seen:
            if isinstance(cause, (ConnectionRefusedError, socket.gaierror, _OutOfTime)):
                return False
            seen.add(id(cause))
            cause = cause.__cause__ or cause.__context__
        return True

    @staticmethod
    def url_of(options: SinkOptions) -> str:
        """The URL a sink sends to: the ``url`` setting, else the ``sinks=`` entry's URL
        (:attr:`~tallyboard.plugin.sinks.SinkOptions.location`), else ``""``.

        Raises:
            ValueError: Both are given and differ (which one was meant cannot be told).
        """
        settings = options.settings
        given = settings.url if isinstance(settings, NetworkSettings) else None
        location = options.location
        if given and location and given != location:
            raise ValueError(
                f"the sinks entry names {location!r} and its 'url' setting {given!r}: give one"
            )
        return given or location or ""

    def call_timeout(self) -> float:
        """The timeout, in seconds, of the network call about to be made; ask before each call.

        Pass it to the client as the call's own timeout, and turn the client's retries off
        (this class retries, with backoff): then no call outlives ``close()``. It is the
        :attr:`NetworkSettings.timeout` setting (else the deadline); the grace
        (:attr:`NetworkSettings.grace_secs`) while the server is known not to answer; and, once
        ``close()`` began, never more than the time it has left, so ``close()`` can wait for
        the call on the wire to end instead of leaving it running.

        Returns:
            Seconds, more than 0.

        Raises:
            TimeoutError: No time is left: ``close()`` gave up (or is about to); make no call.
                Let it propagate: the values stay counted as not sent.
        """
        now = time.monotonic()
        with self._cond:
            if self._give_up:
                raise _OutOfTime(f"{self.name} sink: close() gave up on {self.where}")
            limit = self.deadline
            if self.settings.timeout is not None:
                limit = min(limit, self.settings.timeout)
            if self._place.down():
                limit = min(limit, self.settings.grace_secs)
            if self._end_by is not None:  # most of what close() has left, so the call has
                # ended by the time close() stops waiting
                limit = min(limit, 0.9 * (self._end_by - now))
            if limit <= 0.001:
                raise _OutOfTime(f"{self.name} sink: no time left for {self.where}")
            self._busy_until = max(self._busy_until, now + limit)
            return limit

    def refused(self, error: BaseException) -> None:
        """Called on the sender thread when a batch was refused (say, to end a run FAILED)."""

    def hint(self, outcome: Outcome) -> str:
        """Words added to the close message when values were not delivered (what to do)."""
        return ""

    # -- the sink ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once ``close()`` (or ``abandon()``) began."""
        return self._closing

    @property
    def gave_up(self) -> bool:
        """True once ``close()`` stopped waiting for the sender thread (or ``abandon()`` ran):
        what that thread still does is no longer waited for, and it makes no new call."""
        return self._give_up

    @property
    def unsent(self) -> int:
        """Values accepted and not (yet) delivered; refused ones are not counted."""
        with self._cond:
            return self._queued - self._delivered - self._refused

    def write(self, data: Any) -> None:
        """Queue one encoded value; never waits on the network, but for room in a full queue.

        ``None`` is nothing to send: what an encoder returns for a value the sink's format
        cannot hold (say, a NaN in InfluxDB's line protocol), after saying so.

        Raises:
            OSError: An earlier batch was refused.
            ValueError: The sink is closed.
        """
        with self._cond:
            if self._error is not None:
                self._raise_error()
            if self._closing:
                raise ValueError(f"write() on a closed {self.name} sink")
            if data is None:
                return
            self._queued += 1
            items = self._items
            limit = self.settings.max_pending
            if len(items) >= limit:
                self._cond.notify_all()
                if not self._place.down():
                    self._cond.wait_for(
                        lambda: len(items) < limit or self._place.down(), self.deadline
                    )
                if len(items) >= limit:
                    self._left_out += 1
                    return
            items.append(data)
            if len(items) == self.settings.batch_size:
                self._cond.notify_all()

    def flush(self) -> None:
        """Return once everything written so far is delivered, the server is known not to
        answer, or the deadline passed; say so when values are left undelivered.

        Raises:
            OSError: A batch was refused; or, under ``confirm``, values are undelivered.
        """
        with self._cond:
            self._raise_error()
            target = self._queued
            self._wake = True
            self._cond.notify_all()
            done = self._cond.wait_for(
                lambda: (
                    self._settled() >= target
                    or self._error is not None
                    or (not self.confirm and self._place.down())
                ),
                self.deadline,
            )
            self._raise_error()
            missing = target - self._settled()
            if missing <= 0:
                return
            if not done:
                self._place.stalled = True
            why = self._why()
            if self.confirm:
                raise OSError(
                    f"{self.name} sink: {missing} values not delivered to {self.where} "
                    f"within {self.deadline:g} s ({why})"
                )
            tell = not self._place.told
            self._place.told = True
        if tell:
            warn(
                f"{self.name} sink: {missing} values are not sent to {self.where} yet ({why}); "
                "they stay queued and are sent when it answers",
                SinkWarning,
            )

    def close(self) -> None:
        """Send what is queued and :meth:`finish`, within the deadline; idempotent.

        What could not be delivered is said in one ``SinkWarning`` with its count.

        Raises:
            OSError: A batch was refused; or, under ``confirm``, values are undelivered.
        """
        outcome = self.stop()
        if outcome is not None:
            self.report(outcome)

    def stop(self) -> Outcome | None:
        """The first half of :meth:`close`: send, finish and stop the thread within the
        deadline; None when the sink was closed already. A subclass that records the outcome
        somewhere overrides ``close`` as ``stop()``, its own work, then :meth:`report`."""
        started = time.monotonic()
        hard_end = started + self.deadline  # close() never waits longer
        with self._cond:
            if self._closing:
                return None
            end_by = hard_end
            if self._place.down():  # known down: one more short try, not the whole deadline
                end_by = min(end_by, started + self.settings.grace_secs)
            self._end_by = end_by  # calls made from now on end by then (call_timeout)
            self._closing = True
            self._wake = True
            self._cond.notify_all()
        with self._cond:  # _end_by moves closer when a call fails meanwhile (_try)
            while self._thread.is_alive() and not self._done:
                left = (self._end_by or 0.0) - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        with self._cond:
            if self._thread.is_alive() and not self._done:
                self._place.stalled = True
            self._give_up = True  # no new call from now on
            self._cond.notify_all()
            busy_until = self._busy_until
        if self._thread.is_alive():
            # A call is on the wire: it ends within its timeout, which a call made before
            # close() got as at most the deadline (or the grace) from then. Wait for it, so
            # nothing said unsent below arrives later; never past the deadline.
            until = min(busy_until + _SLACK_SECS, hard_end)
            self._thread.join(max(0.0, until - time.monotonic()))
        with self._cond:
            unanswered = self._unanswered
            if self._thread.is_alive() and self._sending:  # a call outlived its timeout
                unanswered = max(unanswered, len(self._trying))
            error, self._error = self._error, None
            return Outcome(
                self._queued - self._delivered - self._refused,
                self._finished,
                self._why(),
                error,
                unanswered,
            )

    def report(self, outcome: Outcome) -> None:
        """The second half of :meth:`close`: raise a refusal, then say (or, under ``confirm``,
        raise) what was not delivered."""
        if outcome.error is not None:
            raise OSError(
                f"{self.name} sink failed to send to {self.where}: {outcome.error}"
            ) from outcome.error
        if not outcome.unsent and outcome.finished:
            return
        if outcome.unsent:
            message = (
                f"{self.name} sink: {outcome.unsent} values could not be sent to {self.where} "
                f"within {self.deadline:g} s ({outcome.why})"
            )
            if outcome.unanswered:
                message += (
                    f"; {outcome.unanswered} of them were sent and never answered: "
                    "the server may have taken them"
                )
        else:
            message = (
                f"{self.name} sink: could not finish at {self.where} within "
                f"{self.deadline:g} s ({outcome.why})"
            )
        hint = self.hint(outcome)
        if hint:
            message = f"{message}; {hint}"
        if self.confirm:
            raise OSError(message)
        warn(message, SinkWarning)

    def abandon(self) -> None:
        """In a forked child: forget what is queued (the parent sends it); no network call."""
        with self._cond:
            self._items.clear()
            self._closing = self._give_up = True
            self._cond.notify_all()

    # -- internals -----------------------------------------------------------------------------

    def _settled(self) -> int:
        return self._delivered + self._refused + self._left_out

    def _why(self) -> str:
        offline = self._place.offline
        if offline is not None:
            return f"{type(offline).__name__}: {str(offline)[:300]}"
        return "no answer yet"

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise OSError(f"{self.name} sink failed to send to {self.where}: {error}") from error

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def _loop(self) -> None:
        cond, settings = self._cond, self.settings
        pause = settings.retry_secs
        while True:
            with cond:
                if self._failing:  # a pause after a failure: giving up or closing ends it early
                    closing = self._closing

                    def ended(closing: bool = closing) -> bool:
                        return self._give_up or self._closing != closing

                    cond.wait_for(ended, pause)
                    if self._closing != closing:  # close(): one more try now
                        pause = settings.retry_secs
                    else:
                        pause = min(pause * 2, settings.retry_max_secs)
                else:
                    cond.wait_for(
                        lambda: (
                            self._give_up
                            or self._wake
                            or self._closing
                            or len(self._items) >= settings.batch_size
                        ),
                        self.send_secs,
                    )
                if self._give_up:
                    return
                batch = self._items[: settings.batch_size]
                del self._items[: len(batch)]
                self._wake = bool(self._items)
                last = self._closing and not self._items
            ready = self._resolve(batch)
            if self._give_up:  # close() stopped waiting while encodes ran: send nothing more
                return
            if ready or not self._started:
                if not self._try(self._send, ready):
                    continue
                pause = settings.retry_secs
            if last and (not self._overrides("finish") or self._try(self._finish, [])):
                with cond:
                    self._finished = True
                    cond.notify_all()
                return

    def _resolve(self, batch: list[Any]) -> list[Any]:
        """``batch`` with its Deferred encodes run; a value whose encode fails is refused."""
        if not any(type(item) is Deferred for item in batch):
            return batch
        ready = []
        for item in batch:
            if type(item) is Deferred:
                try:
                    item = item()
                except Exception as exc:  # this value cannot be encoded: refused, not retried
                    self._refuse(1, exc)
                    continue
            ready.append(item)
        return ready

    def _overrides(self, name: str) -> bool:
        """Whether the subclass implements hook ``name`` (the base's do nothing, call no one)."""
        return getattr(type(self), name) is not getattr(NetworkSink, name)

    def _send(self) -> bool:
        """Start if not started, then hand the batch being tried to :meth:`send`; True when
        the other end was called."""
        called = False
        if not self._started:
            if self._overrides("start"):
                self.start()
                called = True
            self._started = True
        if self._trying:
            if self._give_up:
                raise _OutOfTime(f"{self.name} sink: close() gave up on {self.where}")
            self._sending = True  # until _try has judged the outcome
            self.send(self._trying)
            called = True
        return called

    def _finish(self) -> bool:
        self.finish()
        return True

    def _try(self, fn: Any, items: list[Any]) -> bool:
        """``fn()`` for ``items``: True when it worked (or was refused), False after a network
        failure (the items are queued again, in order, before the others). What the place is
        known to be (answering or not) changes only when ``fn`` called it."""
        self._trying = items
        try:
            called = fn()
        except _OutOfTime:  # no call was made: nothing learnt of the server
            with self._cond:
                self._items[:0] = items
                self._failing = True
                self._cond.notify_all()
            return False
        except Exception as exc:
            if self.is_refusal(exc):
                with self._cond:
                    self._unanswered = max(0, self._unanswered - len(items))
                self._refuse(len(items), exc)
                self._answered()  # it answered, if only to refuse
                return True
            sent = self._sending and self.may_have_arrived(exc)
            with self._cond:
                if sent:  # the server may apply this try yet: counted apart at close
                    self._unanswered = max(self._unanswered, len(items))
                self._items[:0] = items
                if self._place.offline is None:
                    log.warning(
                        "%s sink: %s does not answer (%s: %s); values stay queued",
                        self.name,
                        self.where,
                        type(exc).__name__,
                        str(exc)[:300],
                    )
                self._place.offline = exc
                self._failing = True
                if self._end_by is not None:  # close() under way: the grace from now on
                    self._end_by = min(self._end_by, time.monotonic() + self.settings.grace_secs)
                self._cond.notify_all()
            return False
        finally:
            self._trying = []
            self._sending = False
        with self._cond:
            self._delivered += len(items)
            self._unanswered = max(0, self._unanswered - len(items))
        if called:
            self._answered()
        return True

    def _answered(self) -> None:
        with self._cond:
            self._failing = False
            self._place.offline = None
            self._place.stalled = self._place.told = False
            self._cond.notify_all()

    def _refuse(self, count: int, exc: BaseException) -> None:
        cause = exc.args[0] if type(exc) is Refused and exc.args else None
        with self._cond:
            self._refused += count
            if self._error is None:
                self._error = cause if isinstance(cause, BaseException) else exc
            self._cond.notify_all()
        self.refused(exc)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.where!r} run={self.options.run!r}>"
