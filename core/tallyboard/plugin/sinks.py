"""What a sink plugin registers, and how a ``sinks=`` entry chooses a sink and its settings.

Every face takes sinks the same way: ``SummaryWriter(sinks=...)``, ``SummaryRecord(sinks=...)``,
``sync(logdir, to=...)`` and ``tallyboard sync --to ... --option NAME=VALUE`` all go through
:func:`parse_sink`. An entry is a sink name or URL (``"csv"``, ``"csv+s3://bucket/run"``,
``"textlog:///tmp/logs"``), or such a text with the sink's own settings beside it:
``("mlflow+http://127.0.0.1:5000", {"deadline": 5.0})``. A sink declares its settings as a
dataclass (:attr:`SinkSpec.settings`); the values given are checked against its fields when the
writer is made, and the sink receives them as an instance of that dataclass in
:attr:`SinkOptions.settings`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tallyboard import paths

if TYPE_CHECKING:  # imported when a sink declares one: import tallyboard stays light
    from tallyboard.plugin.tables import TableExport

#: One ``sinks=`` entry: a sink name or URL, or ``(name or URL, {setting: value})``.
SinkEntry = str | tuple[str, Mapping[str, Any]]

#: The ``sinks=`` a SummaryWriter uses when given none.
DEFAULT_SINKS: tuple[str, ...] = ("tfevents",)


@dataclass
class SinkOptions:
    """Everything a sink factory is told when a writer (or ``sync``) opens it.

    Attributes:
        log_dir: Where this run's data go, a local path or an fsspec URL: the writer's log dir,
            or the location the ``sinks=`` entry named (``"csv+s3://bucket/x"`` gives
            ``"s3://bucket/x"``), with the sub-run's path appended for a sub-run
            (``"s3://bucket/x/acc_train"`` for ``add_scalars("acc", {"train": ...})``). It is a
            place, never a name: use :attr:`run` to name the run.
        max_queue: The writer's ``max_queue``: records a sink may hold before it writes them.
        flush_secs: The writer's ``flush_secs``: the longest a sink may hold a record before it
            stores or sends it. The writer calls no ``flush()`` on a timer: the sink keeps this
            promise itself (:class:`tallyboard.records.storage.BatchWriter` and
            :class:`tallyboard.plugin.network.NetworkSink` do).
        filename_suffix: The writer's ``filename_suffix``, for sinks that name files.
        purge_step: The writer's ``purge_step`` (TensorBoard event files), set on the first open.
        extra: Face-specific values. A writer sets ``"sink"`` (the text of the ``sinks=`` entry
            that chose the sink, without its settings) and ``"writer_log_dir"`` (the writer's own
            log dir, which differs from :attr:`log_dir` for a sink given a location); ``sync``
            sets ``"confirm"`` too (same as :attr:`confirm`); ``SummaryRecord`` passes its
            MindSpore arguments to the ``mindspore`` sink here.
        settings: The sink's own settings: an instance of :attr:`SinkSpec.settings` holding the
            values the user gave beside the sink's name (the dataclass's defaults for the
            others); None for a sink that declares no settings.
        run: The run's name, relative to the directory the user named (the writer's log dir, or
            the log dir given to ``sync``): ``"."`` for that directory itself, ``"acc_train"`` for
            a sub-run, ``"rank_1"`` for a rank's run under ``ranks="each"``. ``tallyboard.read``
            of the same directory names the run the same way.
        location: The location exactly as the ``sinks=`` entry gave it (``"http://host/ingest"``
            for ``"webhook+http://host/ingest"``), the same for every sub-run; None when the entry
            named only the sink. A sink that sends every run to one endpoint uses this and tells
            runs apart by :attr:`run`.
        confirm: True when ``tallyboard sync`` opened the sink: ``flush()`` must then raise
            ``OSError`` unless everything written so far was delivered, since sync remembers as
            sent only what a ``flush()`` confirmed.
    """

    log_dir: str
    max_queue: int = 10
    flush_secs: float = 120.0
    filename_suffix: str = ""
    purge_step: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    settings: Any = None
    run: str = "."
    location: str | None = None
    confirm: bool = False


@runtime_checkable
class Sink(Protocol):
    """An open destination for encoded records.

    ``write`` receives what the (kind, sink) encoder returned, or a :class:`Deferred` for heavy
    kinds, which the sink resolves when it likes (for instance on a background thread).

    Optional batch path, for the hottest kinds: a sink that also has ``write_row(row)`` and
    ``row_key(batch)`` (as :class:`tallyboard.records.recordfile.RecordFile` does) receives, for an
    encoder carrying ``encode.batch``, the caller's validated values as rows ``(key, tag, step,
    wall_time, payload)`` instead of encoded bytes; ``batch(rows)`` later turns consecutive rows
    into their framed records at once, in order (the scalar kind frames thousands per call).
    A sink used by ``SummaryRecord`` may also offer ``write_record(step, wall_time, items)`` and
    ``write_value(step, wall_time, (kind, tag, payload))``, which take one ``record()`` step (or a
    step of one value) without building a ``Recorded``; without them it gets ``write``.
    :class:`OptionalSink` declares these optional members, each with what happens without it.
    """

    def write(self, data: Any) -> None:
        """Take one encoded record (or a :class:`Deferred` to resolve); called in the caller's
        thread, possibly from several threads at once, so it must be thread-safe and cheap."""
        ...

    def flush(self) -> None:
        """Return once everything written so far is stored.

        Raises:
            OSError: storing failed (with several sinks the writer reports it and goes on).
        """
        ...

    def close(self) -> None:
        """Store everything and release the sink; called once per open, and must be idempotent.
        No ``flush()`` is called first."""
        ...


class OptionalSink(Protocol):
    """The members a :class:`Sink` may add for a faster or safer road; each is optional.

    A face looks them up once, when it opens the sink (:meth:`SinkFastPath.of`), so a sink
    gains a road by defining the method, with no registration. Without one, the face takes the
    default its docstring names.
    """

    def write_row(self, row: tuple[Any, ...]) -> None:
        """Queue ``(key, tag, step, wall_time, payload)``, already validated, for an encoder
        with a ``batch`` form (see :meth:`tallyboard.records.recordfile.RecordFile.write_row`).
        Needs :meth:`row_key` too. Default: the writer calls ``write(encode(...))``."""
        ...

    def row_key(self, batch: Callable[[list[Any]], bytes]) -> Any:
        """The key that stands for ``batch`` in the rows given to :meth:`write_row`."""
        ...

    def write_record(self, step: int, wall_time: float, items: list[tuple[str, str, Any]]) -> None:
        """Take one ``SummaryRecord.record()`` step as its ``(kind, tag, payload)`` items.
        Default: ``write(Recorded(step, wall_time, items))``."""
        ...

    def write_value(self, step: int, wall_time: float, item: tuple[str, str, Any]) -> None:
        """Take a step of one value. Default: :meth:`write_record` with a one-item list."""
        ...

    def abandon(self) -> None:
        """In a forked child: forget buffered data without touching files or the parent's
        threads. Default: nothing is called; the child just stops using the sink."""
        ...


@dataclass(frozen=True)
class SinkFastPath:
    """A sink's :class:`OptionalSink` members, bound, or None where it has none.

    Attributes:
        write_row: ``sink.write_row`` when the sink also has ``row_key``, else None.
        row_key: ``sink.row_key`` when the sink also has ``write_row``, else None.
        write_record: ``sink.write_record`` or None.
        write_value: ``sink.write_value`` or None.
        abandon: ``sink.abandon`` or None.
    """

    write_row: Callable[[tuple[Any, ...]], None] | None = None
    row_key: Callable[[Callable[[list[Any]], bytes]], Any] | None = None
    write_record: Callable[[int, float, list[tuple[str, str, Any]]], None] | None = None
    write_value: Callable[[int, float, tuple[str, str, Any]], None] | None = None
    abandon: Callable[[], None] | None = None

    @classmethod
    def of(cls, sink: Any) -> SinkFastPath:
        """Look up ``sink``'s optional members, once (a face does when it opens the sink)."""
        found = {name: getattr(sink, name, None) for name in _OPTIONAL}
        if found["write_row"] is None or found["row_key"] is None:
            found["write_row"] = found["row_key"] = None
        return cls(**found)


_OPTIONAL = tuple(f.name for f in dataclasses.fields(SinkFastPath))


class Deferred:
    """An encode postponed until the sink is ready for it; call it to get the encoded data.

    Args:
        encode: The (kind, sink) encoder.
        args: What to call it with: ``(tag, step, wall_time, payload)``.
        size_hint: The payload's size in bytes (0 when unknown), for sinks that bound memory.
    """

    __slots__ = ("encode", "args", "size_hint")

    def __init__(self, encode: Callable[..., Any], args: tuple[Any, ...], size_hint: int = 0):
        self.encode = encode
        self.args = args
        self.size_hint = size_hint

    def __call__(self) -> Any:
        """Run the encode now and return the encoded data."""
        return self.encode(*self.args)


def resolve(data: Any) -> Any:
    """Return encoded data, running a :class:`Deferred` encode if needed.

    Args:
        data: What a sink's ``write`` received.

    Returns:
        The encoder's output.
    """
    return data() if type(data) is Deferred else data


@dataclass(frozen=True)
class SinkSpec:
    """A sink type: ``open(options)`` returns a :class:`Sink` for one run.

    Attributes:
        name: The sink's name in ``sinks=`` (an identifier).
        open: Called as ``open(options)`` with a :class:`SinkOptions` when a writer opens.
        schemes: URL schemes that select this sink by URL (``"csv"`` for ``csv:///tmp/run``).
        description: One line for ``tallyboard plugins``.
        settings: A dataclass whose fields are the settings a user may give beside the sink's
            name (``("webhook+http://host/in", {"token": "...", "deadline": 5.0})``). Fields
            typed ``str``, ``int``, ``float`` or ``bool`` (or one of them ``| None``) also take
            their text form, as the command line gives them. Any other name given is refused
            with a ``ValueError`` naming the sink. None: the sink takes no settings.
        tensorboard_summaries: True when the sink's encoders (``(kind, name)``) return what
            the built-in ``tfevents`` sink's return: the bytes of one serialized TensorBoard
            ``Event`` whose ``Summary.Value`` messages are exactly what TensorBoard's plugins read.
            ``tallyboard board`` shows every value through the encoders of the sink that says
            so (the one first by name, should several), parsing each as an ``Event``.
        export: What makes the sink a target of ``tallyboard export`` (the formats and file
            suffixes it exports to, and how it writes the table there): a
            :class:`tallyboard.plugin.tables.TableExport`; None: it is not one.
    """

    name: str
    open: Callable[[SinkOptions], Sink]
    schemes: tuple[str, ...] = ()
    description: str = ""
    settings: type | None = None
    tensorboard_summaries: bool = False
    export: TableExport | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Sink name must be an identifier, got {self.name!r}")
        if not callable(self.open):
            raise TypeError(f"Sink {self.name!r}: open must be callable")
        if not isinstance(self.tensorboard_summaries, bool):
            raise TypeError(
                f"Sink {self.name!r}: tensorboard_summaries must be a bool, "
                f"got {self.tensorboard_summaries!r}"
            )
        if self.export is not None and not _is_table_export(self.export):
            raise TypeError(
                f"Sink {self.name!r}: export must be a tallyboard.plugin.tables.TableExport, "
                f"got {self.export!r}"
            )
        if self.settings is not None and not (
            isinstance(self.settings, type) and dataclasses.is_dataclass(self.settings)
        ):
            raise TypeError(
                f"Sink {self.name!r}: settings must be a dataclass type, got {self.settings!r}"
            )

    def make_settings(
        self, given: Mapping[str, Any] | None = None, *, entry: str = "", arg: str = "sinks entry"
    ) -> Any:
        """The sink's settings from the values a user gave, checked.

        Args:
            given: Setting names and values (values may be their text form, as on the command
                line). None or empty: the defaults.
            entry: The ``sinks=`` entry, named in error messages.
            arg: How error messages name the entry (``"to"`` for ``sync``).

        Returns:
            An instance of :attr:`settings`, or None when the sink declares none and none were
            given.

        Raises:
            ValueError: A name the sink does not declare, or a value its settings refuse.
            TypeError: A value of the wrong type.
        """
        label = f"{arg}=" if arg.isidentifier() else f"{arg} "
        where = f"{label}{entry!r}: " if entry else ""
        given = dict(given or {})
        if self.settings is None:
            if given:
                raise ValueError(
                    f"{where}sink {self.name!r} takes no settings, got {', '.join(sorted(given))}"
                )
            return None
        types = setting_types(self.settings)
        unknown = sorted(set(given) - set(types))
        if unknown:
            raise ValueError(
                f"{where}sink {self.name!r} has no setting {', '.join(map(repr, unknown))}; "
                f"its settings: {', '.join(types) or 'none'}"
            )
        values = {
            name: _setting_value(value, types[name], f"{where}sink {self.name!r} setting {name!r}")
            for name, value in given.items()
        }
        try:
            return self.settings(**values)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}sink {self.name!r}: {exc}") from None


def _is_table_export(export: Any) -> bool:
    from tallyboard.plugin.tables import TableExport

    return isinstance(export, TableExport)


def setting_types(settings: type) -> dict[str, Any]:
    """The settings a dataclass declares, by name, with their (resolved) type annotations.

    Args:
        settings: A dataclass type (:attr:`SinkSpec.settings`).

    Returns:
        ``{field name: annotation}`` for every field set in ``__init__``, in declaration order.
    """
    try:
        hints = typing.get_type_hints(settings)
    except Exception:  # an annotation that cannot be resolved: take values as given
        hints = {}
    return {
        f.name: hints.get(f.name, Any)
        for f in dataclasses.fields(settings)
        if f.init and not f.name.startswith("_")
    }


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _setting_value(value: Any, annotation: Any, what: str) -> Any:
    """``value`` checked against ``annotation`` (``str``, ``int``, ``float``, ``bool``, optional
    ones; anything else is taken as given), text converted."""
    if value is None:
        if annotation is Any or type(None) in typing.get_args(annotation):
            return None
        raise TypeError(f"{what} must not be None")
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if len(args) == 1 else annotation
    if base is bool:
        if type(value) is bool:
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise TypeError(f"{what} must be a bool (or true/false), got {value!r}")
    if base is int:
        if type(value) is int:
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise TypeError(f"{what} must be an int, got {value!r}")
    if base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise TypeError(f"{what} must be a number, got {value!r}")
    if base is str:
        if isinstance(value, str):
            return value
        raise TypeError(f"{what} must be a str, got {type(value).__name__}: {value!r}")
    return value


def split_sink_url(entry: str) -> tuple[str, str | None]:
    """A ``sinks=`` entry's text as (sink name or URL scheme, where it writes).

    ``"csv"`` -> ``("csv", None)``; ``"csv+s3://bucket/run"`` -> ``("csv", "s3://bucket/run")``;
    ``"csv:///tmp/run"`` -> ``("csv", "/tmp/run")`` (the sink registered for that URL scheme).

    Args:
        entry: The text of the entry.

    Returns:
        The sink's name (or URL scheme) and its location, None when the entry names none.

    Raises:
        ValueError: A URL that names no location.
    """
    if "://" not in entry:
        return entry, None
    scheme, rest = entry.split("://", 1)
    if "+" in scheme:
        name, inner = scheme.split("+", 1)
        location = f"{inner}://{rest}"
    else:
        name, location = scheme, rest
    if not location or location.endswith("://"):
        raise ValueError(f"sink URL {entry!r} names no location")
    return name, location


class SinkTarget:
    """One sink a writer writes to: its spec, its place, its settings and the run it serves.

    Made by :func:`parse_sink`; :meth:`for_child` gives the same sink for a sub-run and
    :meth:`options` the :class:`SinkOptions` it is opened with.

    Attributes:
        spec: The chosen sink.
        location: The location the entry named (None: the writer's log dir), as given.
        text: The entry's text (name or URL), without settings.
        settings: The checked settings (see :meth:`SinkSpec.make_settings`).
        entry: The entry as the user gave it (text, or ``(text, {settings})``).
        run: The run this target serves, relative to the directory the user named (``"."``).
    """

    __slots__ = ("spec", "location", "text", "settings", "entry", "run")

    def __init__(
        self,
        spec: SinkSpec,
        location: str | None,
        text: str,
        settings: Any = None,
        entry: SinkEntry | None = None,
        run: str = ".",
    ) -> None:
        self.spec = spec
        self.location = location
        self.text = text
        self.settings = settings
        self.entry: SinkEntry = text if entry is None else entry
        self.run = run

    def for_child(self, rel: str) -> SinkTarget:
        """The same sink for sub-run ``rel`` (a validated relative path) of this target's run."""
        run = rel if self.run == "." else f"{self.run}/{rel}"
        return SinkTarget(self.spec, self.location, self.text, self.settings, self.entry, run)

    def log_dir(self, writer_dir: str) -> str:
        """Where the run's data go: ``writer_dir`` (the run's own directory) for a sink given no
        location, else the location with the run's path appended."""
        if self.location is None:
            return writer_dir
        return self.location if self.run == "." else paths.join(self.location, self.run)

    def options(
        self,
        writer_dir: str,
        *,
        max_queue: int,
        flush_secs: float,
        filename_suffix: str = "",
        purge_step: int | None = None,
        confirm: bool = False,
    ) -> SinkOptions:
        """The :class:`SinkOptions` this target's sink is opened with.

        Args:
            writer_dir: The run's own directory (the writer's log dir).
            max_queue: See :class:`SinkOptions`.
            flush_secs: See :class:`SinkOptions`.
            filename_suffix: See :class:`SinkOptions`.
            purge_step: See :class:`SinkOptions`.
            confirm: True for ``tallyboard sync``.

        Returns:
            The options, ``extra`` holding ``"sink"`` and ``"writer_log_dir"`` (and ``"confirm"``).
        """
        extra: dict[str, Any] = {"sink": self.text, "writer_log_dir": writer_dir}
        if confirm:
            extra["confirm"] = True
        return SinkOptions(
            log_dir=self.log_dir(writer_dir),
            max_queue=max_queue,
            flush_secs=flush_secs,
            filename_suffix=filename_suffix,
            purge_step=purge_step,
            extra=extra,
            settings=self.settings,
            run=self.run,
            location=self.location,
            confirm=confirm,
        )

    def __repr__(self) -> str:
        return f"<SinkTarget {self.text!r} run={self.run!r}>"


def parse_sink(registry: Any, entry: Any, *, arg: str = "sinks entry") -> SinkTarget:
    """Resolve one ``sinks=`` entry (the same on every face).

    - ``"csv"``: the sink called (or registered for URL scheme) ``csv``, writing into the
      writer's log dir;
    - ``"csv+s3://bucket/run"``: the ``csv`` sink writing into ``s3://bucket/run``;
    - ``"csv:///tmp/run"`` / ``"csv://rel/run"``: the sink registered for URL scheme ``csv``,
      writing into the path after ``://``;
    - ``(any of those, {"setting": value, ...})``: with the sink's settings
      (:attr:`SinkSpec.settings`).

    Args:
        registry: The plugin registry (:func:`tallyboard.plugin.registry.get_registry`).
        entry: The entry.
        arg: How error messages name the entry.

    Returns:
        The target.

    Raises:
        TypeError: An entry of another form, or a setting of the wrong type.
        ValueError: An unknown sink, a URL that names no location, or a setting the sink does
            not declare or refuses (the message names the sink).
    """
    label = f"{arg}=" if arg.isidentifier() else f"{arg} "  # to='x', sinks entry 'x'
    if isinstance(entry, (tuple, list)):
        if not (
            len(entry) == 2
            and isinstance(entry[0], str)
            and entry[0]
            and isinstance(entry[1], Mapping)
            and all(isinstance(k, str) for k in entry[1])
        ):
            raise TypeError(
                f"{label}{entry!r}: with settings, an entry is (sink name or URL, "
                "{setting name: value})"
            )
        text, given = entry[0], entry[1]
    elif isinstance(entry, str) and entry:
        text, given = entry, {}
    else:
        raise TypeError(
            f"{arg} must be a non-empty str naming a sink or sink URL, or (that str, "
            f"{{setting: value}}), got {entry!r}"
        )
    try:
        name, location = split_sink_url(text)
    except ValueError as exc:
        raise ValueError(f"{label}{text!r}: {exc}") from None
    if name not in registry.sinks and name not in getattr(registry, "schemes", {}):
        known = ", ".join(sorted(registry.sinks)) or "none"
        if not name.isidentifier():
            raise ValueError(
                f"{label}{text!r} is neither a sink name nor a sink URL: write '<sink>' (csv), "
                "'<sink>+<url>' (csv+s3://bucket/run) or '<scheme>://<path>' (csv:///tmp/run); "
                f"installed sinks: {known}"
            )
        raise ValueError(f"{label}{text!r}: unknown sink {name!r}; installed sinks: {known}")
    spec = registry.sink(name)
    settings = spec.make_settings(given, entry=text, arg=arg)
    return SinkTarget(spec, location, text, settings, entry if given else text)


def check_holds_values(registry: Any, name: str, *, arg: str = "to") -> None:
    """Refuse a sink that has no encoder for any kind, such as an export target only: ``convert``
    and ``sync`` would otherwise count every value as one it cannot hold and succeed, writing
    nothing.

    Raises:
        ValueError: Sink ``name`` holds no kind (the message says what it is for and lists the
            sinks that hold values).
    """
    holding = sorted({sink for _, sink in registry.encoders})
    if name in holding:
        return
    spec = registry.sinks[name]
    what = f" ({spec.description})" if spec.description else ""
    raise ValueError(
        f"{arg}={name!r}: sink {name!r} holds no logged values{what}; choose a sink that does: "
        + ", ".join(holding)
    )


def parse_sinks(
    registry: Any, sinks: Sequence[SinkEntry] | None, *, allow_empty: bool = False
) -> list[SinkTarget]:
    """Resolve a ``sinks=`` argument: a list of entries (see :func:`parse_sink`).

    Args:
        registry: The plugin registry (:func:`tallyboard.plugin.registry.get_registry`).
        sinks: The entries; None means :data:`DEFAULT_SINKS`.
        allow_empty: Whether an empty list is allowed (a ``SummaryRecord`` needs no extra sink;
            a ``SummaryWriter`` needs one).

    Returns:
        One target per entry, in order.

    Raises:
        TypeError: ``sinks`` is not a list of entries, or an entry is malformed.
        ValueError: An unknown sink, a bad setting, or the same sink twice for one place.
    """
    if sinks is None:
        sinks = DEFAULT_SINKS
    if isinstance(sinks, tuple) and len(sinks) == 2 and isinstance(sinks[1], Mapping):
        raise TypeError(
            f"sinks must be a list of entries; put the entry with settings in a list: [{sinks!r}]"
        )
    if isinstance(sinks, (str, bytes, Mapping)) or not hasattr(sinks, "__iter__"):
        raise TypeError(
            f"sinks must be a list of sink names or URLs, got {type(sinks).__name__}: {sinks!r}"
        )
    targets: list[SinkTarget] = []
    for entry in sinks:
        target = parse_sink(registry, entry)
        if any(t.spec.name == target.spec.name and t.location == target.location for t in targets):
            raise ValueError(
                f"sinks entry {target.text!r} repeats sink {target.spec.name!r} for the same location"
            )
        targets.append(target)
    if not targets and not allow_empty:
        raise TypeError("sinks must name at least one sink")
    return targets
