"""Checks and conversions shared by every face and kind: tags, steps, wall times, arrays.

Every check raises in the caller with the argument named, so bad input never reaches a sink.
Arrays come from NumPy, Python numbers and sequences, torch tensors on any device, and anything
that speaks ``__array__`` or DLPack (JAX, CuPy); they are always copied, so later mutation by the
caller does not change what is written.
"""

from __future__ import annotations

import math
import operator
import os
import time
from typing import Any

import numpy as np

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_now = time.time


def type_name(value: Any) -> str:
    return type(value).__name__


def check_tag(tag: Any, arg: str = "tag") -> str:
    """A tag is a str that can be written as UTF-8."""
    if type(tag) is not str:
        if isinstance(tag, str):
            return check_tag(str(tag), arg)
        raise TypeError(f"{arg} must be a str, got {type_name(tag)}: {tag!r}")
    if not tag.isascii():
        check_utf8(tag, arg)
    return tag


def check_text(text: Any, arg: str) -> str:
    """Any str written into a file (text, names, labels, keys): a str that can be UTF-8."""
    return check_tag(text, arg)


def check_utf8(text: str, arg: str) -> str:
    """``text`` unchanged if it can be written as UTF-8 (no lone surrogate), else ValueError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{arg} {text!r} cannot be written as UTF-8: {exc.reason} (at index {exc.start})"
        ) from None
    return text


def check_utf8_array(arr: np.ndarray, arg: str) -> np.ndarray:
    """A NumPy str array unchanged if every element can be written as UTF-8, else ValueError."""
    if arr.dtype.kind == "U" and arr.size:
        codes = np.ascontiguousarray(arr).reshape(-1).view(np.uint32).reshape(arr.size, -1)
        bad = ((codes >= 0xD800) & (codes <= 0xDFFF)).any(axis=1)
        if bad.any():
            index = np.unravel_index(int(np.argmax(bad)), arr.shape)
            where = "".join(f"[{int(i)}]" for i in index)
            check_utf8(str(arr[index]), f"{arg}{where}")
    return arr


def check_flag(value: Any, arg: str) -> bool:
    """A yes/no argument: anything with a truth value, as torch takes it; else TypeError."""
    if type(value) is bool:
        return value
    try:
        return bool(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{arg} must be a bool, got {type_name(value)}: {exc}") from None


def check_step(step: Any, arg: str = "global_step") -> int | None:
    """A step is None or an integer (Python, NumPy, 0-d integer tensor) within int64."""
    if step is None:
        return None
    if type(step) is not int:
        if isinstance(step, (float, np.floating)):
            raise TypeError(f"{arg} must be an int, got float {step!r}")
        try:
            step = operator.index(step)
        except TypeError:
            raise TypeError(f"{arg} must be an int, got {type_name(step)}: {step!r}") from None
    if not INT64_MIN <= step <= INT64_MAX:
        raise ValueError(f"{arg} {step} is outside the int64 range")
    return step


def check_walltime(walltime: Any, arg: str = "walltime") -> float:
    """A wall time is None (now) or a finite number of seconds since the epoch."""
    if walltime is None:
        return _now()
    if type(walltime) is not float:
        is_number = isinstance(walltime, (int, float, np.number)) and not isinstance(walltime, bool)
        is_scalar_tensor = hasattr(walltime, "__float__") and getattr(walltime, "ndim", None) == 0
        if not (is_number or is_scalar_tensor) or isinstance(walltime, (str, bytes, np.bool_)):
            raise TypeError(
                f"{arg} must be a number of seconds, got {type_name(walltime)}: {walltime!r}"
            )
        walltime = float(walltime)
    if not math.isfinite(walltime):
        raise ValueError(f"{arg} must be finite, got {walltime!r}")
    return walltime


def _from_torch(value: Any) -> np.ndarray:
    t = value.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if str(t.dtype) == "torch.bfloat16":
        import torch

        t = t.to(torch.float32)  # exact: every bfloat16 is a float32
    return np.array(t.resolve_conj().numpy() if t.is_complex() else t.numpy(), copy=True)


def to_array(value: Any, arg: str = "value", *, allow_empty: bool = False) -> np.ndarray:
    """Copy ``value`` into a NumPy array, or raise TypeError naming ``arg``."""
    if isinstance(value, np.ndarray):
        out = value.copy()
    elif type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        out = _from_torch(value)
    elif isinstance(value, (str, bytes, bytearray)) or value is None:
        raise TypeError(f"{arg} must be numeric array-like, got {type_name(value)}")
    elif hasattr(value, "__array__") or isinstance(
        value, (list, tuple, int, float, complex, np.generic)
    ):
        try:
            out = np.array(value, copy=True)
        except (ValueError, TypeError) as exc:
            raise TypeError(f"{arg} cannot be converted to an array: {exc}") from None
    elif hasattr(value, "__dlpack__"):
        try:
            out = np.array(np.from_dlpack(value), copy=True)
        except (BufferError, RuntimeError, TypeError) as exc:
            raise TypeError(f"{arg}: DLPack conversion failed: {exc}") from None
    else:
        raise TypeError(f"{arg} must be an array, tensor or number, got {type_name(value)}")
    if out.dtype == object or out.dtype.kind in "USV":
        raise TypeError(f"{arg} must hold numbers, got an array of dtype {out.dtype}")
    if not allow_empty and out.size == 0:
        raise ValueError(f"{arg} is empty")
    return out


def to_float(value: Any, arg: str = "value") -> float:
    """A single number as float: Python or NumPy scalars, one-element arrays and tensors."""
    tp = type(value)
    if tp is float:
        return value  # type: ignore[no-any-return]
    if tp is int or tp is bool:
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{arg} {value} is too large for a float") from None
    if isinstance(value, (str, bytes, bytearray)) or value is None:
        raise TypeError(f"{arg} must be a number, got {type_name(value)}: {value!r}")
    if isinstance(value, np.generic):
        if value.dtype.kind in "biuf":
            return float(value)
        raise TypeError(f"{arg} must be a real number, got {value.dtype}")
    arr = to_array(value, arg, allow_empty=True)
    if arr.size != 1:
        raise ValueError(f"{arg} must hold exactly one element, got shape {tuple(arr.shape)}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must be a real number, got dtype {arr.dtype}")
    return float(arr.reshape(()))


def check_int(value: Any, arg: str, *, minimum: int | None = None) -> int:
    """An int (not bool) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{arg} must be an int, got {type_name(value)}: {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{arg} must be >= {minimum}, got {value}")
    return value


def check_positive_number(value: Any, arg: str) -> float:
    """A finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{arg} must be a number, got {type_name(value)}: {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{arg} must be a finite number > 0, got {value!r}")
    return value


def env_seconds(var: str, default: float) -> float:
    """A positive number of seconds from environment variable ``var`` (``default`` when unset);
    anything else is a ValueError naming the variable."""
    text = os.environ.get(var, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{var}={text!r} must be a positive number of seconds")
    return value


# Messages that name the fix, built only once a check has failed (correct calls pay nothing).

_SHOWN = 40  # characters of a value's repr a message shows


def describe(value: Any) -> str:
    """A short description of ``value`` for a message: its type and, for arrays, its shape."""
    name = type(value).__name__
    shape = getattr(value, "shape", None)
    if shape and not isinstance(value, (str, bytes)):
        try:
            return f"{name} of shape {tuple(int(n) for n in shape)}"
        except (TypeError, ValueError):
            pass
    text = repr(value.item() if shape == () and hasattr(value, "item") else value)
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    return f"{name} {text}"


def swapped_tag(
    method: str, tag: Any, value: Any, value_arg: str, tag_arg: str = "tag"
) -> str | None:
    """The message for ``method(value, tag, ...)``: a tag that is no str and a value that is one.

    Returns None when the two do not look swapped (``tag`` is a str, or ``value`` is not).
    """
    if isinstance(tag, str) or not isinstance(value, str):
        return None
    shown = value if len(value) <= _SHOWN else value[: _SHOWN - 3] + "..."
    return (
        f"{tag_arg} and {value_arg} look swapped: {tag_arg} got {describe(tag)} and "
        f"{value_arg} got the str {shown!r}; the tag comes first: "
        f"{method}({tag_arg}, {value_arg}, ...)"
    )


def raise_if_swapped(
    method: str, tag: Any, value: Any, value_arg: str, tag_arg: str = "tag"
) -> None:
    """Raise TypeError with :func:`swapped_tag`'s message when it has one; else return.

    Call it in an ``except`` block around the check of the value, then re-raise the original
    error when it returns.
    """
    message = swapped_tag(method, tag, value, value_arg, tag_arg)
    if message is not None:
        raise TypeError(message) from None
