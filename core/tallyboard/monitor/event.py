"""``Event``: a named, timestamped bag of str/float/int/bool values."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tallyboard.paths import encodable

#: The name of the events a :class:`~tallyboard.monitor.Stat` emits (torch's name, verbatim).
STAT_EVENT = "torch.monitor.Stat"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SIMPLE = (str, float, bool)


class data_value_t:  # noqa: N801 - torch's name
    """An event data value: one of ``str``, ``float``, ``int`` or ``bool``.

    Exported for import compatibility with ``torch.monitor``; never instantiated by tallyboard.
    """


def _check_name(name: object, what: str = "name") -> str:
    """A name as a str that every sink can write (a lone surrogate would fail only later)."""
    if isinstance(name, str):
        name = str(name)
        if name.isascii() or encodable(name):
            return name
        raise ValueError(f"{what} {name!r} cannot be written as UTF-8: it holds a lone surrogate")
    if isinstance(name, bytes):
        return name.decode("utf-8")
    raise TypeError(f"{what} must be a str, got {type(name).__name__}")


def _check_int(value: int, key: str) -> int:
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    raise ValueError(f"data[{key!r}]: int {value} does not fit in 64 bits")


def _check_value(value: object, key: str) -> str | float | int | bool:
    cls = type(value)
    if cls in _SIMPLE:
        return value  # type: ignore[return-value]
    if cls is int:
        return _check_int(value, key)  # type: ignore[arg-type]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return _check_int(int(value), key)
    if cls.__module__ == "numpy" and cls.__name__ != "ndarray":  # a numpy scalar
        kind = getattr(getattr(value, "dtype", None), "kind", None)
        if kind == "b":
            return bool(value)
        if kind in ("i", "u"):
            return _check_int(int(value), key)  # type: ignore[call-overload]
        if kind == "f":
            return float(value)  # type: ignore[arg-type]
    raise TypeError(
        f"data[{key!r}] must be a str, float, int or bool, got {cls.__module__}.{cls.__qualname__}"
        if cls.__module__ != "builtins"
        else f"data[{key!r}] must be a str, float, int or bool, got {cls.__name__}"
    )


def _check_data(data: object) -> dict[str, str | float | int | bool]:
    if not isinstance(data, Mapping):
        raise TypeError(
            f"data must be a mapping of str to str/float/int/bool, got {type(data).__name__}"
        )
    out: dict[str, str | float | int | bool] = {}
    for key, value in data.items():
        if type(key) is not str:
            key = _check_name(key, "data keys")
        out[key] = _check_value(value, key)
    return out


def _check_timestamp(timestamp: object) -> datetime:
    if not isinstance(timestamp, datetime):
        raise TypeError(f"timestamp must be a datetime.datetime, got {type(timestamp).__name__}")
    return timestamp


class Event:
    """A named, timestamped set of values, handed to every registered event handler.

    A :class:`Stat` makes one per window (named :data:`STAT_EVENT`); your code may make its own
    and pass it to :func:`log_event`. ``data`` is copied when the Event is made and on every
    read of :attr:`data`, so changing a dict afterwards changes nothing (as in torch). The three
    attributes may be reassigned, with the same checks. Unlike torch's, Events compare by value,
    are unhashable, print readably and can be pickled or copied (to send them between
    processes); ``timestamp`` is kept as given, time zone included (torch reinterprets it as
    local time); a bool stays a bool (torch makes it 1.0), and NumPy scalars become int, float
    or bool.

    Args:
        name: The event's name, a str (bytes are decoded as UTF-8, as torch does).
        timestamp: When it happened, a ``datetime.datetime`` (naive or aware).
        data: A mapping (dict, ``MappingProxyType``, ...) of str keys to str, float, int (within
            int64) or bool values, or NumPy scalars of those kinds.

    Raises:
        TypeError: ``name`` is not a str; ``timestamp`` is not a ``datetime`` (a ``date``, a
            number or a str); ``data`` is not a mapping, a key is not a str, or a value is of
            another type (list, None, bytes, a tensor): the message names the key.
        ValueError: An int value beyond int64; ``name`` or a key holds a lone surrogate.

    Example:
        >>> from datetime import datetime
        >>> from tallyboard.monitor import Event, log_event
        >>> event = Event("saved", datetime(2024, 1, 2, 3, 4, 5), {"epoch": 3})
        >>> event
        Event(name='saved', timestamp=datetime.datetime(2024, 1, 2, 3, 4, 5), data={'epoch': 3})
        >>> log_event(event)  # every registered handler gets it
    """

    __slots__ = ("_name", "_timestamp", "_data", "__weakref__")

    def __init__(self, name: str, timestamp: datetime, data: Mapping[str, Any]) -> None:
        self._name = _check_name(name)
        self._timestamp = _check_timestamp(timestamp)
        self._data = _check_data(data)

    @classmethod
    def _trusted(cls, name: str, timestamp: datetime, data: dict[str, Any]) -> Event:
        """Build an Event from values already known to be valid (no copy, no checks)."""
        event = cls.__new__(cls)
        event._name = name
        event._timestamp = timestamp
        event._data = data
        return event

    @property
    def name(self) -> str:
        """The event's name (:data:`STAT_EVENT` for events a :class:`Stat` emits)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = _check_name(value)

    @property
    def timestamp(self) -> datetime:
        """When the event happened: the ``datetime`` given, time zone kept."""
        return self._timestamp

    @timestamp.setter
    def timestamp(self, value: datetime) -> None:
        self._timestamp = _check_timestamp(value)

    @property
    def data(self) -> dict[str, str | float | int | bool]:
        """A fresh copy of the event's values, ``{str: str | float | int | bool}``."""
        return self._data.copy()

    @data.setter
    def data(self, value: Mapping[str, Any]) -> None:
        self._data = _check_data(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (
            self._name == other._name
            and self._timestamp == other._timestamp
            and self._data == other._data
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self._name!r}, timestamp={self._timestamp!r}, "
            f"data={self._data!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        state = getattr(self, "__dict__", None) or None
        return (_rebuild, (type(self), self._name, self._timestamp, self._data), state)


def _rebuild(cls: type[Event], name: str, timestamp: datetime, data: dict[str, Any]) -> Event:
    return cls._trusted(name, timestamp, dict(data))
