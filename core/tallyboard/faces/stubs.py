"""The typing stub that shows type checkers and editors the ``add_*`` methods plugins give.

:mod:`tallyboard.faces.writer_methods` sets each plugin's method on SummaryWriter when the
registry is built, which a type checker cannot see. :func:`stub_text` writes what it would see:
a class whose attributes are the installed plugins' own functions, imported from their modules,
so signatures and docstrings come from the plugins' source and nothing of them is copied.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from tallyboard.faces.writer_methods import STUB_MODULE
from tallyboard.plugin.registry import Registry

HEADER = '''"""The add_* methods SummaryWriter gets from the plugins installed here, for type checkers.

Written by `tallyboard stubs` from the registry; run it again after installing or removing a
plugin (`tallyboard stubs --check` says whether this file is current). Each method is the
plugin's own function; a method whose function cannot be imported by name is typed loosely.
"""

from typing import Any

'''


def _importable(fn: Any) -> bool:
    """Whether ``from fn.__module__ import fn.__qualname__`` gives ``fn`` back."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or not name.isidentifier():
        return False
    try:
        return getattr(importlib.import_module(module), name, None) is fn
    except Exception:
        return False


def stub_text(registry: Registry) -> str:
    """The stub module for ``registry``'s methods: its ``PluginMethods`` class names them all."""
    imports, body = [], []
    for i, (name, (_, fn)) in enumerate(sorted(registry.methods.items())):
        if _importable(fn):
            imports.append(f"from {fn.__module__} import {fn.__qualname__} as _m{i}\n")
            body.append(f"    {name} = _m{i}\n")
        else:
            body.append(f"    def {name}(self, *args: Any, **kwargs: Any) -> Any: ...\n")
    cls = '\n\nclass PluginMethods:\n    """What the installed plugins add."""\n\n'
    return HEADER + "".join(imports) + cls + "".join(body)


def default_folder() -> Path:
    """Where ``tallyboard stubs`` writes by default: the folder that holds the tallyboard package
    (site-packages, or the source folder of an editable install)."""
    return Path(__file__).resolve().parents[2]  # .../tallyboard/faces/stubs.py


def stub_path(folder: str | os.PathLike[str]) -> Path:
    """The stub's file under ``folder``: ``<folder>/_tallyboard_methods/__init__.pyi``."""
    return Path(folder) / STUB_MODULE / "__init__.pyi"


def write_stub(registry: Registry, folder: str | os.PathLike[str]) -> Path:
    """Write the stub of ``registry``'s methods under ``folder`` (with a ``py.typed`` marker, so
    type checkers take it from site-packages too); returns the stub's path."""
    path = stub_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "py.typed").write_text("")
    path.write_text(stub_text(registry))
    return path
