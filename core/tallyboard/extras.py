"""Optional dependencies: importing one that is missing says which extra installs it."""

from __future__ import annotations

import importlib
from typing import Any


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def require(module: str, extra: str, purpose: str) -> Any:
    """Import ``module``, or raise :class:`MissingExtra` naming ``extra`` and what needs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise  # the module is there but something it imports is not: not ours to explain
        raise MissingExtra(
            f"{purpose} needs {exc.name}, which is not installed: "
            f'pip install "tallyboard[{extra}]" (from a checkout: pip install ".[{extra}]")',
            name=exc.name,
        ) from None
