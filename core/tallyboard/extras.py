"""Optional dependencies: importing one that is missing says which extra installs it."""

from __future__ import annotations

import importlib
from typing import Any


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def require(module: str, extra: str, purpose: str, distribution: str = "tallyboard") -> Any:
    """Import an optional dependency, or say in one line how to install it.

    Args:
        module: The module to import (``"matplotlib.pyplot"``).
        extra: The extra of ``distribution`` that installs it (``"figures"``).
        purpose: What needs it, for the message (``"add_figure"``).
        distribution: The distribution whose extra that is: a third-party plugin names its own.

    Returns:
        The imported module.

    Raises:
        MissingExtra: ``module`` (or its top-level package) is not installed; the message holds
            the ``pip install`` line.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise  # the module is there but something it imports is not: not ours to explain
        line = f'pip install "{distribution}[{extra}]"'
        if distribution == "tallyboard":
            line += f' (from a checkout: pip install ".[{extra}]")'
        raise MissingExtra(
            f"{purpose} needs {exc.name}, which is not installed: {line}", name=exc.name
        ) from None
