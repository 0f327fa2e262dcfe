"""Every public class, function and method of the faces, ``read``, ``convert`` and the plugin
contract has a docstring: the API reference of the documentation site (``docs/api/``) is
generated from them, so a name without one would be an empty entry there.

``PUBLIC`` lists the modules and names that make up that API (what ``docs/api/`` documents;
``tests/test_public_surface.py`` checks the docstrings of the wider plugin surface);
every method a class defines or inherits from a tallyboard class is checked, with ``__call__``
(the summary operators and handlers are called), leaving out other dunders and ``_private``
names. A docstring that has a Google-style ``Args:`` section must name exactly the parameters,
so the reference never documents an argument that is not there or misses one that is.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PUBLIC: dict[str, list[str]] = {
    # the faces
    "tallyboard": ["SummaryWriter", "SummaryRecord", "SummaryCollector", "Reader", "Update"],
    "tallyboard.monitor": [
        "Aggregation",
        "Stat",
        "Event",
        "EventHandlerHandle",
        "TensorboardEventHandler",
        "log_event",
        "register_event_handler",
        "unregister_event_handler",
        "close_all_stats",
    ],
    "tallyboard.faces.ops": ["ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary"],
    # read, convert, sync
    "tallyboard.reading.read": ["read"],
    "tallyboard.reading.convert": ["convert", "ConvertSummary"],
    "tallyboard.reading.sync": ["sync", "SyncSummary", "SyncError"],
    # the plugin contract and the testing kit
    "tallyboard.plugin.hookspecs": [
        "register_kinds",
        "register_sinks",
        "register_encoders",
        "register_readers",
        "register_decoders",
        "register_event_handlers",
        "writer_opened",
        "writer_flushing",
        "writer_closing",
    ],
    "tallyboard.plugin.kinds": ["Kind"],
    "tallyboard.plugin.sinks": [
        "Sink",
        "SinkSpec",
        "SinkOptions",
        "Deferred",
        "parse_sink",
        "parse_sinks",
    ],
    "tallyboard.plugin.network": ["NetworkSink", "NetworkSettings", "Refused", "Outcome"],
    "tallyboard.plugin.readers": [
        "ReaderSpec",
        "FileReader",
        "ChunkedFileReader",
        "Batch",
        "Batches",
        "warn_corrupt",
        "size_of",
    ],
    "tallyboard.plugin.registry": [
        "get_registry",
        "Registry",
        "PluginInfo",
        "PluginWarning",
        "add_plugin",
        "remove_plugin",
        "reset_registry",
        "build_registry",
    ],
    "tallyboard.testing": [
        "tallyboard_registry",
        "register_plugin",
        "memory_sink",
        "Record",
        "MemorySink",
        "MemoryPlugin",
        "encode_any",
    ],
}


# Public names allowed to lack a docstring for now: each is checked to still lack one, so the
# list cannot go stale. Keep it empty.
AWAITING: set[str] = set()


def _own_doc(obj: Any) -> str:
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    doc = getattr(obj, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties ``cls`` defines or inherits from a tallyboard class."""
    seen: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        if base.__module__.split(".")[0].startswith("tallyboard"):
            seen.update(vars(base))
    for name, value in seen.items():
        if name.startswith("_") and name != "__call__":
            continue
        raw = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if inspect.isfunction(raw) or isinstance(value, property):
            yield name, value


def public_names() -> Iterator[tuple[str, Any]]:
    from tallyboard.plugin.registry import get_registry

    get_registry()  # sets the plugins' add_* methods on SummaryWriter, as help() and Sphinx see it
    for module_name, names in PUBLIC.items():
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            qual = f"{module_name}.{name}"
            yield qual, obj
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for member, value in _members(obj):
                    METHODS.add(f"{qual}.{member}")
                    yield f"{qual}.{member}", value


METHODS: set[str] = set()  # the names public_names() found as members of a class


NAMES = dict(public_names())


def test_the_public_api_is_the_one_the_reference_documents() -> None:
    assert len(NAMES) > 120
    assert "tallyboard.SummaryWriter.add_scalar" in NAMES  # inherited from the visible methods
    assert "tallyboard.faces.ops.ScalarSummary.__call__" in NAMES
    assert set(NAMES) >= AWAITING, AWAITING - set(NAMES)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_public_name_has_a_docstring(name: str) -> None:
    doc = _own_doc(NAMES[name])
    if name in AWAITING:
        assert not doc, f"{name} has a docstring now: remove it from AWAITING"
        return
    assert doc, f"{name} has no docstring; the API reference would show an empty entry"


ARGS = re.compile(r"^(\s*)Args:\s*$", re.M)


def documented_args(doc: str) -> list[str] | None:
    """The parameter names of a Google-style ``Args:`` section, or None when there is none."""
    doc = inspect.cleandoc(doc)
    m = ARGS.search(doc)
    if not m:
        return None
    names, indent = [], None
    for line in doc[m.end() :].splitlines()[1:]:
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if width <= len(m.group(1)):
            break  # the next section
        indent = width if indent is None else indent
        if width == indent:
            entry = re.match(r"\s*\**([A-Za-z_]\w*)\s*(\([^)]*\))?\s*:", line)
            assert entry, f"not a parameter entry: {line!r}"
            names.append(entry.group(1))
    return names


def _parameters(fn: Callable[..., Any], method: bool = False) -> list[str]:
    params = list(inspect.signature(fn).parameters.values())
    if method and params and params[0].name not in ("self", "cls"):
        params = params[1:]  # a plugin's function set as a writer method: its first is the writer
    return [p.name for p in params if p.name not in ("self", "cls")]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_an_args_section_names_exactly_the_parameters(name: str) -> None:
    obj = NAMES[name]
    raw = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    if isinstance(obj, property) or not callable(raw):
        return
    fn = raw.__init__ if inspect.isclass(raw) else raw
    listed = documented_args(_own_doc(raw)) if _own_doc(raw) else None
    if listed is None and inspect.isclass(raw):
        listed = documented_args(_own_doc(fn)) if _own_doc(fn) else None
    if listed is None:
        return
    try:
        params = _parameters(fn, method=name in METHODS and not isinstance(obj, staticmethod))
    except (TypeError, ValueError):  # no signature to compare with (a C type's __init__)
        return
    assert sorted(listed) == sorted(params), (name, listed, params)


def test_the_args_section_reader_reads_google_style() -> None:
    doc = """Do a thing.

    Args:
        tag: the name.
        value (float): the value,
            on two lines.
        *args: more.

    Returns:
        Nothing.
    """
    assert documented_args(doc) == ["tag", "value", "args"]
    assert documented_args("No sections.") is None
