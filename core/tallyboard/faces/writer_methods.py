"""The plugins' ``add_*`` methods as class attributes of SummaryWriter: one road for every method.

A kind plugin's method (``Kind.methods``) is set on :class:`WriterMethods` as the plugin's own
function, built-in and third-party alike, when the registry is built; it is forgotten when the
registry is reset. The registry is built on first use, not at ``import tallyboard``: a look-up of
a missing class attribute (``SummaryWriter.add_histogram``, ``hasattr(SummaryWriter, ...)``) or
``dir(SummaryWriter)`` (and so ``help(SummaryWriter)``) builds it first. ``writer.add_x`` is then
a plain method look-up: the plugin's function bound to the writer, nothing in between.

Type checkers and editors cannot run this: ``tallyboard stubs`` writes a typing stub,
``_tallyboard_methods/__init__.pyi``, that names each installed plugin's function (no copy of its
signature or docstring), and :class:`WriterMethods` derives from it when type checking. Without
the stub, type checkers take the methods as ``Any``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tallyboard.plugin import registry as _registry

if TYPE_CHECKING:
    from _tallyboard_methods import PluginMethods  # written by `tallyboard stubs`
else:
    PluginMethods = object

#: The module a stub is written as: ``<folder>/_tallyboard_methods/__init__.pyi``.
STUB_MODULE = "_tallyboard_methods"


class WriterMethodsType(type):
    """The metaclass that builds the registry when a class is asked for a method not set yet."""

    def __getattr__(cls, name: str) -> Any:
        if not name.startswith("_") and _installed is None:
            _registry.get_registry()  # installs the methods (see _install)
            if name in WriterMethods.__dict__:
                return getattr(cls, name)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")

    def __dir__(cls) -> Iterable[str]:
        _registry.get_registry()
        return super().__dir__()


class WriterMethods(PluginMethods, metaclass=WriterMethodsType):
    """torch.utils.tensorboard's ``add_*`` methods: each is the function its kind plugin registered."""

    __slots__ = ()

    if not TYPE_CHECKING:  # a type checker sees only the stub's methods, not "any attribute"

        def __getattr__(self, name: str) -> Any:
            if name.startswith("add_"):
                _registry.get_registry()
                if name in WriterMethods.__dict__:
                    return getattr(self, name)
                raise AttributeError(
                    f"{name} needs a plugin that is not installed or is blocked "
                    "(see `tallyboard plugins`)"
                )
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


_installed: _registry.Registry | None = None


def _install(reg: _registry.Registry | None) -> None:
    """Set the methods of ``reg`` on :class:`WriterMethods` (None: forget them)."""
    global _installed
    for name in [n for n in WriterMethods.__dict__ if n.startswith("add_")]:
        if reg is None or name not in reg.methods:
            delattr(WriterMethods, name)
    if reg is not None:
        for name, (_, fn) in reg.methods.items():
            method = fn if isinstance(fn, types.FunctionType) else _as_method(fn)
            if WriterMethods.__dict__.get(name) is not fn:
                setattr(WriterMethods, name, method)
    _installed = reg


def _as_method(fn: Any) -> Any:
    """A function calling ``fn(writer, ...)`` for a callable that Python would not bind to the
    writer as a class attribute (a bound method, a ``functools.partial``, a callable object)."""

    @functools.wraps(fn)
    def method(writer: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(writer, *args, **kwargs)

    return method


_registry.on_change(_install)
