"""The provider's defaults and the checks of its options, in one place for :func:`serve` and the
command line.

Light on purpose (only the standard library): ``tallyboard board`` parses its options with these
before it starts TensorBoard, and must not import grpcio or TensorBoard first.
"""

from __future__ import annotations

import math

#: Seconds between the end of one pass over the log dir and the start of the next.
DEFAULT_RELOAD = 5.0
#: Seconds a call to the store may take, and a request may wait for the first listing.
DEFAULT_DEADLINE = 10.0
#: Address the provider listens on unless told otherwise (loopback: this machine only).
DEFAULT_HOST = "127.0.0.1"


def _prefix(name: str | None) -> str:
    return f"{name}: " if name else ""


def seconds(value: object, name: str | None = None, *, zero_ok: bool = False) -> float:
    """``value`` as a finite number of seconds, > 0 (or >= 0 with ``zero_ok``).

    Args:
        value: What was given (a number; the command line parses its text first).
        name: The option named in the message (None: not named, as argparse names it itself).
        zero_ok: Whether 0 is allowed (``reload=0``: one pass).

    Returns:
        The seconds, as a float.

    Raises:
        TypeError: ``value`` is not a number.
        ValueError: ``value`` is negative, infinite, NaN, or 0 without ``zero_ok``.
    """
    expected = f"expected a number of seconds {'>= 0' if zero_ok else '> 0'}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(_prefix(name) + expected)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ValueError(_prefix(name) + expected)
    return float(value)


def port(value: object, name: str | None = None) -> int:
    """``value`` as a TCP port, 0..65535 (0: a free one).

    Args:
        value: What was given (an int; the command line parses its text first).
        name: The option named in the message (None: not named).

    Returns:
        The port.

    Raises:
        TypeError: ``value`` is not an int.
        ValueError: ``value`` is outside 0..65535.
    """
    expected = f"expected a port in 0..65535, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(_prefix(name) + expected)
    if not 0 <= value <= 65535:
        raise ValueError(_prefix(name) + expected)
    return value
