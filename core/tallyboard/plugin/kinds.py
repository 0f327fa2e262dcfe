"""What a kind plugin registers: a data kind and the methods that log it."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The key under which a decoded row carries the payload its decoder returned (a kind that
#: declares ``payload`` and ``to_row``): ``read`` leaves it out of its table; ``convert`` and
#: ``tallyboard board`` hand the payload to encoders as it is (:meth:`Kind.rebuild`).
PAYLOAD_KEY = "__payload__"
#: The keys of a decoded row that are not the payload's fields.
_ROW_KEYS = frozenset({"run", "tag", "step", "wall_time", PAYLOAD_KEY})


@dataclass(frozen=True)
class Kind:
    """A data kind, such as ``scalar`` or ``histogram``.

    ``convert`` validates a value given to ``add_value(name, tag, value)`` and returns the
    format-neutral payload that encoders receive. ``methods`` maps facade method names (such as
    ``add_histogram``) to functions called as ``fn(writer, *args, **kwargs)``; they validate their
    arguments and call ``writer.emit(kind_name, tag, payload, global_step, walltime)``.
    ``heavy`` kinds are costly to encode (PNG, large arrays): a sink may encode them off the
    caller's thread, so a caller that releases the GIL is not stalled.
    ``log``, when set, is how ``add_value(name, tag, value, global_step, walltime)`` logs a kind
    that is not one record (files beside the run, several records): it is called as
    ``log(writer, tag, value, global_step, walltime)`` instead of ``convert`` plus ``emit``.
    ``read_table``, when set, shapes what ``tallyboard.read(kind=name)`` returns: it is called as
    ``read_table(rows, batches)`` with the decoded rows (each with its ``run``) and every
    ``(run, Batch)`` read, and returns the rows of the table (say, one row per run).
    ``from_row``, when set, rebuilds a value from a row a reader decoded (its ``tag``, ``step``,
    ``wall_time`` and the decoder's fields), so ``tallyboard convert`` can write it in another
    format and ``tallyboard board`` show it: it returns ``(tag, value)``, the tag to log under
    (the row's, or the one that the kind's encoders turn back into the row's) and either a
    payload (an instance of ``payload``, handed to encoders as it is) or a value ``convert``
    accepts. It raises ``ValueError`` for a row it cannot rebuild; that value is then reported
    as not converted.
    ``payload``, when set, is the type (or tuple of types) of the payloads ``convert`` returns
    and encoders receive, each a class or, so that building the registry imports nothing, the
    dotted path ``"module:Class"`` imported on first use (:attr:`payload_types`): a value of it is a payload already (:meth:`payload_of`), so
    ``convert`` need not accept its own output (a kind whose payload holds statistics of an
    array cannot rebuild the array).
    ``to_row``, when set with ``payload``, gives a payload's fields as a row of
    ``tallyboard.read``'s table (``to_row(payload) -> dict``), declared once for every format:
    a decoder of the kind may then return the payload itself (or a list of payloads, or
    ``(tag, payload)``) instead of a dict; ``read`` shows ``to_row``'s fields, and ``convert``
    and ``tallyboard board`` hand the payload to encoders as it is, no ``from_row`` needed. A
    format that writes any kind's row (JSONL) then writes and reads the kind with no encoder
    or decoder of its own; a payload type that takes those fields as keyword arguments (a
    dataclass) is rebuilt from them (:meth:`rebuild`).
    ``join``, when set, makes one value of the payloads of several rows of one tag and step
    (``join(payloads)``; the images of one summary, a row each), or returns None when they stay
    values of their own. Where one value holds them all (TensorBoard's summaries: ``tallyboard
    board`` and ``convert`` to such a sink), consecutive rows of one tag and step are joined so
    (:meth:`rebuild_rows`); otherwise the last of them would hide the others.
    ``log_tag``, when set, is the tag a value read under ``tag`` is logged under again
    (``log_tag(tag) -> str``): the inverse of what the kind's encoders add to a tag (the text
    kind's ``/text_summary``), so a payload a decoder returned under the tag the file holds
    is written back under the same tag, not a longer one.
    """

    name: str
    convert: Callable[[Any], Any]
    methods: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    heavy: bool = False
    description: str = ""
    log: Callable[..., None] | None = None
    read_table: Callable[..., list[dict[str, Any]]] | None = None
    from_row: Callable[[dict[str, Any]], tuple[str, Any]] | None = None
    payload: type | str | tuple[type | str, ...] | None = None
    to_row: Callable[[Any], dict[str, Any]] | None = None
    join: Callable[[Sequence[Any]], Any] | None = None
    log_tag: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Kind name must be an identifier, got {self.name!r}")
        if not callable(self.convert):
            raise TypeError(f"Kind {self.name!r}: convert must be callable")
        if self.log is not None and not callable(self.log):
            raise TypeError(f"Kind {self.name!r}: log must be callable")
        if self.read_table is not None and not callable(self.read_table):
            raise TypeError(f"Kind {self.name!r}: read_table must be callable")
        if self.join is not None and not callable(self.join):
            raise TypeError(f"Kind {self.name!r}: join must be callable")
        if self.log_tag is not None and not callable(self.log_tag):
            raise TypeError(f"Kind {self.name!r}: log_tag must be callable")
        if self.from_row is not None and not callable(self.from_row):
            raise TypeError(f"Kind {self.name!r}: from_row must be callable")
        if self.to_row is not None and (not callable(self.to_row) or self.payload is None):
            raise TypeError(
                f"Kind {self.name!r}: to_row must be callable, and given with payload (the type "
                "whose instances it turns into rows)"
            )
        if self.payload is not None:
            items = self.payload if isinstance(self.payload, tuple) else (self.payload,)
            if not items or not all(isinstance(t, type) or _is_path(t) for t in items):
                raise TypeError(
                    f"Kind {self.name!r}: payload must be a type or a tuple of types (each a "
                    f"class or a 'module:Class' path), got {self.payload!r}"
                )
        for method_name, fn in self.methods.items():
            if not method_name.startswith("add_") or not method_name.isidentifier():
                raise ValueError(
                    f"Kind {self.name!r}: method name {method_name!r} must look like add_<name>"
                )
            if not callable(fn):
                raise TypeError(f"Kind {self.name!r}: method {method_name!r} is not callable")

    @functools.cached_property
    def payload_types(self) -> tuple[type, ...]:
        """The classes of ``payload`` (its ``"module:Class"`` paths imported); () when unset.

        Raises:
            TypeError: a path names no class.
        """
        if self.payload is None:
            return ()
        items = self.payload if isinstance(self.payload, tuple) else (self.payload,)
        return tuple(t if isinstance(t, type) else _import_class(self.name, t) for t in items)

    def payload_of(self, value: Any) -> Any:
        """``value`` as this kind's payload: as it is when it is one (``payload``), else what
        ``convert`` makes of it."""
        if self.payload is not None and isinstance(value, self.payload_types):
            return value
        return self.convert(value)

    @property
    def rebuildable(self) -> bool:
        """Whether a decoded row can be written again: the kind has ``from_row``, or its
        decoders may give payloads (``payload`` and ``to_row``)."""
        return self.from_row is not None or self.to_row is not None

    def rebuild(self, row: dict[str, Any]) -> tuple[str, Any]:
        """``(tag, payload)`` of a decoded row: the payload its decoder returned, as it is,
        else what ``from_row`` rebuilds (made a payload by :meth:`payload_of`), else, for a
        kind with ``to_row``, its payload type called with the row's fields as keywords. The
        tag is the row's (through ``log_tag`` when the kind declares it), or ``from_row``'s.

        Raises:
            ValueError: the row cannot be rebuilt (no payload, no ``from_row``, or
                ``from_row`` refuses it).
        """
        payload = row.get(PAYLOAD_KEY)
        if (
            payload is not None
            and self.payload is not None
            and isinstance(payload, self.payload_types)
        ):
            return self._log_tag(row["tag"]), payload
        if self.from_row is not None:
            tag, value = self.from_row(row)
            return tag, self.payload_of(value)
        if self.to_row is not None and len(self.payload_types) == 1:
            cls = self.payload_types[0]
            fields = {k: v for k, v in row.items() if k not in _ROW_KEYS}
            try:  # a payload made of to_row's fields (a dataclass): no from_row needed
                return self._log_tag(row["tag"]), cls(**fields)
            except TypeError as exc:
                raise ValueError(
                    f"kind {self.name!r}: the row is no {cls.__name__} ({exc})"
                ) from None
        raise ValueError(f"kind {self.name!r}: the row holds no payload and there is no from_row")

    def _log_tag(self, tag: str) -> str:
        return tag if self.log_tag is None else self.log_tag(tag)

    def rebuild_rows(
        self, rows: Sequence[dict[str, Any]], join: bool = False
    ) -> Iterator[tuple[list[dict[str, Any]], list[tuple[str, Any]] | Exception]]:
        """Each value of decoded ``rows`` rebuilt (:meth:`rebuild`), in order: ``(its rows,
        [(tag, payload), ...])``, or ``(its rows, the exception)`` when it cannot be. With
        ``join`` and a kind that declares ``join``, consecutive rows of one tag and step are
        one value, their payloads joined when the kind can (else one payload each)."""
        i, n = 0, len(rows)
        while i < n:
            j = i + 1
            if join and self.join is not None:
                key = (rows[i].get("tag"), rows[i].get("step"))
                while j < n and (rows[j].get("tag"), rows[j].get("step")) == key:
                    j += 1
            group = list(rows[i:j])
            i = j
            try:
                built = [self.rebuild(row) for row in group]
                if len(built) > 1 and self.join is not None:
                    joined = self.join([payload for _, payload in built])
                    if joined is not None:
                        built = [(built[0][0], joined)]
            except Exception as exc:  # this value cannot be rebuilt: the caller counts it
                yield group, exc
                continue
            yield group, built


def _is_path(text: Any) -> bool:
    """Whether ``text`` looks like ``"module:Class"``."""
    if not isinstance(text, str) or text.count(":") != 1:
        return False
    module, name = text.split(":")
    return all(part.isidentifier() for part in module.split(".")) and name.isidentifier()


def _import_class(kind: str, path: str) -> type:
    module, name = path.split(":")
    cls = getattr(importlib.import_module(module), name, None)
    if not isinstance(cls, type):
        raise TypeError(f"Kind {kind!r}: payload {path!r} names no class")
    return cls
