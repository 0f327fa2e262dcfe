"""The plugin registry: built once, on first use, from ``tallyboard`` entry points.

Environment variables:

- ``TALLYBOARD_DISABLE_PLUGIN_AUTOLOAD=1``: load only the plugins shipped with tallyboard itself.
- ``TALLYBOARD_BLOCK_PLUGINS=a,b``: do not load the plugins named ``a`` and ``b`` (entry-point
  names, as listed by ``tallyboard plugins``). The essential plugins cannot be blocked.
- ``TALLYBOARD_TRACE_HOOKS=1``: print every hook call while the registry is built.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from tallyboard.plugin import hookspecs
from tallyboard.plugin.kinds import Kind
from tallyboard.plugin.sinks import SinkSpec
from tallyboard.warn import warn

ENTRY_POINT_GROUP = "tallyboard"
AUTOLOAD_ENV = "TALLYBOARD_DISABLE_PLUGIN_AUTOLOAD"
BLOCK_ENV = "TALLYBOARD_BLOCK_PLUGINS"
TRACE_ENV = "TALLYBOARD_TRACE_HOOKS"
#: Plugins the default writer cannot work without; blocking them is refused with a warning.
ESSENTIAL = frozenset({"tfevents", "scalar"})
OWN_DISTRIBUTION = "tallyboard"


class PluginWarning(UserWarning):
    """A plugin could not be loaded or registered something invalid; it was skipped."""


@dataclass
class PluginInfo:
    """One plugin as the registry saw it (what ``tallyboard plugins`` lists).

    Attributes:
        name: The entry-point name (what ``TALLYBOARD_BLOCK_PLUGINS`` names).
        distribution: The distribution it comes from ("" for one registered in process).
        version: That distribution's version.
        kinds: Kinds it registered.
        sinks: Sinks it registered.
        encoders: ``(kind, sink)`` pairs it registered encoders for.
        readers: Readers (formats) it registered.
        decoders: ``(format, kind)`` pairs it registered decoders for, in registration order.
        status: ``loaded``, ``blocked``, ``failed`` or ``not autoloaded``.
        error: The failure ("" when none).
    """

    name: str
    distribution: str = ""
    version: str = ""
    kinds: list[str] = field(default_factory=list)
    sinks: list[str] = field(default_factory=list)
    encoders: list[tuple[str, str]] = field(default_factory=list)
    status: str = "loaded"  # loaded | blocked | failed | not autoloaded
    error: str = ""
    readers: list[str] = field(default_factory=list)
    decoders: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Registry:
    """Everything plugins registered, as plain dictionaries for the hot path."""

    manager: pluggy.PluginManager
    kinds: dict[str, Kind] = field(default_factory=dict)
    methods: dict[str, tuple[Kind, Callable[..., Any]]] = field(default_factory=dict)
    sinks: dict[str, SinkSpec] = field(default_factory=dict)
    schemes: dict[str, SinkSpec] = field(default_factory=dict)
    encoders: dict[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)
    event_handlers: list[Callable[[Any], None]] = field(default_factory=list)
    readers: dict[str, Any] = field(default_factory=dict)
    decoders: dict[tuple[str, str], Callable[..., Any]] = field(default_factory=dict)
    plugins: list[PluginInfo] = field(default_factory=list)

    def kind(self, name: str) -> Kind:
        """The kind called ``name``, or a ValueError listing the known kinds."""
        try:
            return self.kinds[name]
        except (KeyError, TypeError):
            if not isinstance(name, str):
                raise TypeError(f"kind must be a str, got {type(name).__name__}") from None
            known = ", ".join(sorted(self.kinds)) or "none"
            raise ValueError(f"unknown kind {name!r}; installed kinds: {known}") from None

    def decoders_of(self, fmt: str) -> dict[str, Callable[..., Any]]:
        """The decoders of format ``fmt`` by kind, in the order a reader asks them.

        That order is the registration order: plugins in the order ``tallyboard plugins``
        lists them (entry-point names in alphabetical order, then plugins registered in this
        process in the order they were added), and each plugin's decoders in the order it
        registered them.
        """
        return {kind: fn for (f, kind), fn in self.decoders.items() if f == fmt}

    def sink(self, name: str) -> SinkSpec:
        """The sink called ``name`` (or registered for URL scheme ``name``)."""
        spec = self.sinks.get(name) or self.schemes.get(name)
        if spec is None:
            known = ", ".join(sorted(self.sinks)) or "none"
            raise ValueError(f"unknown sink {name!r}; installed sinks: {known}")
        return spec

    def call_lifecycle(self, hook: str, writer: Any) -> None:
        """Run a lifecycle hook (``writer_opened`` ...) if any plugin implements it."""
        caller = getattr(self.manager.hook, hook)
        if caller.get_hookimpls():
            caller(writer=writer)


_lock = threading.RLock()
_registry: Registry | None = None
_extra_plugins: list[tuple[str, Any]] = []
_watchers: list[Callable[[Registry | None], None]] = []


def get_registry() -> Registry:
    """The process-wide registry, built on first call."""
    global _registry
    reg = _registry
    if reg is None:
        with _lock:
            if _registry is None:
                built = build_registry(extra=_extra_plugins)
                for watcher in _watchers:  # before other threads see it (they skip the lock)
                    watcher(built)
                _registry = built
            reg = _registry
    return reg


def reset_registry() -> None:
    """Forget the registry; the next use rebuilds it (picks up new plugins)."""
    global _registry
    with _lock:
        if _registry is not None:
            _registry = None
            for watcher in _watchers:
                watcher(None)


def on_change(watcher: Callable[[Registry | None], None]) -> None:
    """Call ``watcher(registry)`` each time the registry is built (now, if it is) and
    ``watcher(None)`` each time it is reset: how the faces keep their methods in step."""
    with _lock:
        _watchers.append(watcher)
        if _registry is not None:
            watcher(_registry)


def add_plugin(plugin: Any, name: str) -> None:
    """Register ``plugin`` (a module or object with hook implementations) in this process."""
    with _lock:
        _extra_plugins.append((name, plugin))
        reset_registry()


def remove_plugin(name: str) -> None:
    """Undo :func:`add_plugin`."""
    with _lock:
        _extra_plugins[:] = [(n, p) for n, p in _extra_plugins if n != name]
        reset_registry()


def _warn(message: str) -> None:
    warn(message, PluginWarning)


def _blocked_names() -> set[str]:
    raw = os.environ.get(BLOCK_ENV, "")
    names = {n.strip() for n in raw.split(",") if n.strip()}
    refused = names & ESSENTIAL
    if refused:
        _warn(
            f"{BLOCK_ENV} names essential plugin(s) {', '.join(sorted(refused))}; "
            "they cannot be blocked and stay loaded"
        )
    return names - ESSENTIAL


def _entry_points() -> Iterable[metadata.EntryPoint]:
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def _dist_of(ep: metadata.EntryPoint, known: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """``(name, version)`` of the distribution of ``ep``; ``known`` keeps them per distribution
    (its metadata file is parsed once, not twice per entry point)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "", ""
    if id(dist) not in known:
        meta = dist.metadata
        known[id(dist)] = (meta["Name"] or "", meta["Version"] or "")
    return known[id(dist)]


def _check_contract(name: str, plugin: Any) -> None:
    wanted = getattr(plugin, "TALLYBOARD_CONTRACT", hookspecs.CONTRACT_VERSION)
    if wanted != hookspecs.CONTRACT_VERSION:
        raise RuntimeError(
            f"plugin {name!r} was built for tallyboard hook contract {wanted!r}, "
            f"this tallyboard provides contract {hookspecs.CONTRACT_VERSION}"
        )


def build_registry(extra: Iterable[tuple[str, Any]] = ()) -> Registry:
    """Load plugins from entry points (plus ``extra``) and collect what they register."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV):
        manager.trace.root.setwriter(lambda msg: sys.stderr.write(f"[tallyboard] {msg}"))
        manager.enable_tracing()
    reg = Registry(manager=manager)
    blocked = _blocked_names()
    autoload = not os.environ.get(AUTOLOAD_ENV)
    seen: set[str] = set()
    candidates: list[tuple[str, Callable[[], Any], str, str]] = []
    known: dict[int, tuple[str, str]] = {}
    eps = sorted(_entry_points(), key=lambda e: e.name)  # held: ids in known stay theirs
    for ep in eps:
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist, version = _dist_of(ep, known)
        candidates.append((ep.name, ep.load, dist, version))
    for name, plugin in extra:
        candidates.append((name, _returning(plugin), "(registered in process)", ""))

    for name, load, dist, version in candidates:
        info = PluginInfo(name=name, distribution=dist, version=version)
        reg.plugins.append(info)
        if name in blocked:
            info.status = "blocked"
            continue
        if not autoload and dist not in (OWN_DISTRIBUTION, "(registered in process)"):
            info.status = "not autoloaded"
            continue
        try:
            plugin = load()
            _check_contract(name, plugin)
            if manager.is_registered(plugin):
                continue
            manager.register(plugin, name=name)
        except Exception as exc:  # a broken plugin must never take the host down
            info.status, info.error = "failed", f"{type(exc).__name__}: {exc}"
            _warn(
                f"tallyboard plugin {name!r} from distribution {dist or 'unknown'!r} failed to load "
                f"({info.error}); it is skipped. To stop loading it, set {BLOCK_ENV}={name}"
            )

    by_name = {info.name: info for info in reg.plugins}
    _collect(reg, by_name, "register_kinds", _add_kind)
    _collect(reg, by_name, "register_sinks", _add_sink)
    _collect(reg, by_name, "register_encoders", _add_encoder)
    _collect(reg, by_name, "register_event_handlers", _add_handler)
    _collect(reg, by_name, "register_readers", _add_reader)
    _collect(reg, by_name, "register_decoders", _add_decoder)
    _pair_rows(reg)
    return reg


class _RowEncoder:
    """A format's encoder of any kind's row (``rows``), as the encoder of one kind: it gets
    the payload's ``Kind.to_row`` fields."""

    def __init__(self, encode_row: Callable[..., Any], kind: Any) -> None:
        self.encode_row, self.kind = encode_row, kind

    def __call__(self, tag: str, step: int | None, wall_time: float, payload: Any) -> Any:
        return self.encode_row(self.kind.name, tag, step, wall_time, self.kind.to_row(payload))


def _paired(
    keys: list[tuple[str, str]],
    table: dict[tuple[str, str], Callable[..., Any]],
    at: int,
    kinds: dict[str, Any],
    make: Callable[[Callable[..., Any], Any], Callable[..., Any]],
) -> list[tuple[str, str]]:
    """``keys`` (a plugin's pairs) with each ``"*"`` one (its kind at index ``at``) whose
    function is marked ``rows`` replaced by one pair per kind of ``kinds`` that ``table`` lacks
    (``make(function, kind)`` put there); the ``"*"`` entry leaves ``table``."""
    out: list[tuple[str, str]] = []
    for key in keys:
        fn = table.get(key)
        if key[at] != "*" or not getattr(fn, "rows", False):
            out.append(key)
            continue
        assert fn is not None
        del table[key]
        for name, kind in kinds.items():
            new = (name, key[1]) if at == 0 else (key[0], name)
            if new not in table:
                table[new] = make(fn, kind)
                out.append(new)
    return out


def _pair_rows(reg: Registry) -> None:
    """Give every kind that declares ``to_row`` the encoders and decoders a format registered
    for any kind's row: an encoder of kind ``"*"`` with a true ``rows`` attribute is called as
    ``encode_row(kind, tag, step, wall_time, row)`` for each such kind without an encoder of its
    own for that sink (and no longer for the others: they stay kinds the sink cannot encode); a
    decoder of kind ``"*"`` with ``rows`` becomes the decoder of each such kind in that format
    that has none. The pairs take the place of the ``"*"`` one in its plugin's lists (what
    ``tallyboard plugins`` shows), in the order readers ask decoders."""
    with_rows = {name: k for name, k in reg.kinds.items() if k.to_row is not None}
    for info in reg.plugins:
        info.encoders = _paired(info.encoders, reg.encoders, 0, with_rows, _RowEncoder)
        info.decoders = _paired(info.decoders, reg.decoders, 1, with_rows, lambda f, k: f)
    order = [key for info in reg.plugins for key in info.decoders]
    if set(order) == set(reg.decoders):  # the order readers ask in: the plugins' order
        reg.decoders = {key: reg.decoders[key] for key in order}


def _returning(plugin: Any) -> Callable[[], Any]:
    return lambda: plugin


def _collect(
    reg: Registry,
    by_name: dict[str, PluginInfo],
    hook: str,
    add: Callable[..., None],
) -> None:
    caller = getattr(reg.manager.hook, hook)
    trace = bool(os.environ.get(TRACE_ENV))
    for impl in caller.get_hookimpls():
        info = by_name.get(impl.plugin_name) or PluginInfo(name=impl.plugin_name)
        if (
            trace
        ):  # impls are called one by one (to isolate failures), so pluggy's tracing misses them
            sys.stderr.write(f"[tallyboard] {hook}(register) -> plugin {impl.plugin_name!r}\n")

        def register(*args: Any, _info: PluginInfo = info) -> None:
            add(reg, _info, *args)

        try:
            impl.function(register=register)
        except Exception as exc:
            info.status, info.error = "failed", f"{type(exc).__name__}: {exc}"
            _warn(
                f"tallyboard plugin {info.name!r} from distribution {info.distribution or 'unknown'!r} "
                f"failed in {hook} ({info.error}); what it registered before the failure is kept. "
                f"To stop loading it, set {BLOCK_ENV}={info.name}"
            )


def _add_kind(reg: Registry, info: PluginInfo, kind: Kind) -> None:
    if not isinstance(kind, Kind):
        raise TypeError(f"register_kinds expects tallyboard.Kind, got {type(kind).__name__}")
    if kind.name in reg.kinds:
        _warn(f"plugin {info.name!r} registers kind {kind.name!r} again; the first one is kept")
        return
    clashes = [m for m in kind.methods if m in reg.methods]
    if clashes:
        _warn(
            f"plugin {info.name!r}: method(s) {', '.join(clashes)} already exist; kind {kind.name!r} skipped"
        )
        return
    reg.kinds[kind.name] = kind
    for method_name, fn in kind.methods.items():
        reg.methods[method_name] = (kind, fn)
    info.kinds.append(kind.name)


def _add_sink(reg: Registry, info: PluginInfo, spec: SinkSpec) -> None:
    if not isinstance(spec, SinkSpec):
        raise TypeError(f"register_sinks expects tallyboard.SinkSpec, got {type(spec).__name__}")
    if spec.name in reg.sinks:
        _warn(f"plugin {info.name!r} registers sink {spec.name!r} again; the first one is kept")
        return
    reg.sinks[spec.name] = spec
    for scheme in spec.schemes:
        reg.schemes.setdefault(scheme, spec)
    info.sinks.append(spec.name)


def _add_encoder(
    reg: Registry, info: PluginInfo, kind: str, sink: str, encode: Callable[..., Any]
) -> None:
    if not (isinstance(kind, str) and isinstance(sink, str) and callable(encode)):
        raise TypeError(
            "register_encoders expects register(kind_name: str, sink_name: str, encode)"
        )
    key = (kind, sink)
    if key in reg.encoders:
        _warn(
            f"plugin {info.name!r} registers an encoder of {kind!r} for {sink!r} again; the first one is kept"
        )
        return
    reg.encoders[key] = encode
    info.encoders.append(key)


def _add_handler(reg: Registry, info: PluginInfo, handler: Callable[[Any], None]) -> None:
    if not callable(handler):
        raise TypeError("register_event_handlers expects a callable")
    reg.event_handlers.append(handler)


def _add_reader(reg: Registry, info: PluginInfo, spec: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    if not isinstance(spec, ReaderSpec):
        raise TypeError(
            f"register_readers expects tallyboard.plugin.readers.ReaderSpec, got {type(spec).__name__}"
        )
    if spec.name in reg.readers:
        _warn(f"plugin {info.name!r} registers reader {spec.name!r} again; the first one is kept")
        return
    reg.readers[spec.name] = spec
    info.readers.append(spec.name)


def _add_decoder(
    reg: Registry, info: PluginInfo, fmt: str, kind: str, decode: Callable[..., Any]
) -> None:
    if not (isinstance(fmt, str) and isinstance(kind, str) and callable(decode)):
        raise TypeError(
            "register_decoders expects register(format_name: str, kind_name: str, decode)"
        )
    if (fmt, kind) in reg.decoders:
        _warn(
            f"plugin {info.name!r} registers a decoder of {kind!r} for {fmt!r} again; the first one is kept"
        )
        return
    reg.decoders[(fmt, kind)] = decode
    info.decoders.append((fmt, kind))
