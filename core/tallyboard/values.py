"""Checks and conversions shared by every face and kind: tags, steps, wall times, arrays.

Every check raises in the caller with the argument named, so bad input never reaches a sink.
Arrays come from NumPy, Python numbers and sequences, torch tensors on any device, and anything
that speaks ``__array__`` or DLPack (JAX, CuPy); they are always copied, so later mutation by the
caller does not change what is written. Device values (``jax.Array``, CUDA tensors) can instead be
deferred (:func:`defer_device`): the call starts their copy and the writer's side waits for it.
"""

from __future__ import annotations

import math
import operator
import os
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Sequence
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
    """Copy ``value`` into a NumPy array, or raise TypeError naming ``arg``.

    Pass your parameter's name as ``arg`` (``to_array(values, arg="values")``): every error
    names it, so the user reads their own argument's name, not ``value``. An empty array is a
    ValueError unless ``allow_empty``.
    """
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
        if out.dtype.kind != "V" or "float" not in out.dtype.name:
            raise TypeError(f"{arg} must hold numbers, got an array of dtype {out.dtype}")
        out = out.astype(np.float32)  # bfloat16, float8 (ml_dtypes, as jax gives): exact
    if not allow_empty and out.size == 0:
        raise ValueError(f"{arg} is empty")
    return out


def to_float(value: Any, arg: str = "value") -> float:
    """A single number as float: Python or NumPy scalars, one-element arrays and tensors.

    Errors name ``arg``: pass your parameter's name (``to_float(low, arg="low")``).
    """
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
        if value.dtype.kind in "biuf" or "float" in value.dtype.name:  # bfloat16, float8 too
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


# -- Device values: taken by reference, materialised on the writer's side ---------------------
#
# A jax.Array (and a CUDA torch tensor) is a future: the step that computes it may still run.
# ``np.asarray`` on it waits for that step, so converting it in the call would serialise the
# caller with the device. Instead the call starts the device-to-host copy and queues a
# :class:`Pending`; the writer's thread materialises it. Nothing here imports jax or torch: a
# value is one of theirs only if its type's module says so and the library is already imported.

#: How many device values may be pending (copied or copying, not yet materialised) at once in
#: this process. At the bound, the call that would go past it first materialises the oldest
#: pending value itself, waiting for the device to finish it.
MAX_PENDING_DEVICE_VALUES = 1024

#: Which jax values still being computed are copied into a new buffer on their device before
#: the call returns, so that deleting or donating them afterwards (``x.delete()``,
#: ``jax.jit(..., donate_argnums=...)``) loses nothing: ``"arrays"`` (the default) those of more
#: than one element, the parameters and state a training loop donates to its next step, not
#: the scalars (the metrics a step returns, which it does not); ``True`` all; ``False`` none.
#: The copy is a dispatch to the device, most of a call's cost while a step runs (0.4-0.5 ms,
#: against 0.06-0.07 ms for the rest, on a 2-core machine). A value not copied that is deleted or donated before
#: the writer has read it is not written: a later call raises :class:`DeviceValueLost` naming
#: its tag and step. A value already computed is copied to the host in the call whatever the
#: setting (its payload is still made on the writer's side), so it is always safe.
COPY_DEVICE_VALUES: bool | str = "arrays"

#: The values deferred so far, oldest first, by weak reference: one the writers have made and let
#: go is gone at once (its payload with it), and is dropped from here when the deque is tidied.
_pending: deque[weakref.ref[Pending]] = deque()
_making: dict[int, int] = {}  # id of a Pending being made -> the thread making it
_jax_types: set[type] = set()  # types found to be jax arrays or tracers
_tracer_types: set[type] = set()  # those of them that are tracers
#: How many entries ``_pending`` may hold before a scalars' call tidies it (drops those the
#: writers have made or let go): tidying every call cost a caller a few microseconds while a
#: step runs. A call that defers arrays tidies it every time.
_TIDY_AT = 64


def on_device(value: Any) -> bool:
    """Whether ``value`` is a device value, one to hand to :func:`defer_device`: a
    ``jax.Array`` (or a jax tracer, which it refuses; when jax is imported) or a torch tensor
    on a CUDA device. Cheap for anything else (its type's module is looked at, nothing is
    imported)."""
    tp = type(value)
    if tp in _jax_types:  # a type seen before (isinstance of jax.Array, an ABC, costs 2 us)
        return True
    module = tp.__module__
    if module.startswith("jax"):
        jax = sys.modules.get("jax")
        found = jax is not None and isinstance(value, (jax.Array, jax.core.Tracer))
        if found and len(_jax_types) < 64:
            if isinstance(value, jax.core.Tracer):  # type: ignore[union-attr]
                _tracer_types.add(tp)
            _jax_types.add(tp)
        return found
    if module.startswith("torch"):
        return getattr(value, "is_cuda", False) is True
    return False


class DeviceValueLost(RuntimeError):
    """A device value was deleted or donated after it was logged and before the writer could
    read it (it was still being computed when logged): it is not written."""


class Pending:
    """A payload still on its way from a device: ``result()`` waits for the device copy and
    makes the payload (``make(host_array)``), once; the writer's thread calls it.

    Attributes:
        nbytes: The value's size on the host, for the writer's bound on pending bytes.
    """

    __slots__ = ("_make", "_source", "_event", "_value", "_error", "nbytes", "label", "__weakref__")

    def __init__(
        self, make: Callable[[np.ndarray], Any], source: Any, nbytes: int, event: Any = None
    ) -> None:
        self._make: Callable[[np.ndarray], Any] | None = make
        #: What the host array is read from: the jax array (or its copy on its device), a host
        #: array read in the call, or a torch tensor in pinned memory whose copy ``_event`` ends.
        self._source: Any = source
        self._event: Any = event
        self._value: Any = None
        self._error: BaseException | None = None
        self.nbytes = nbytes
        #: Where the value was logged, ``(tag, step)``, for the message when it is lost.
        self.label: tuple[Any, Any] | None = None

    @property
    def done(self) -> bool:
        """Whether the payload has been made (or failed)."""
        return self._make is None

    def drop(self) -> None:
        """Forget the value unmade (a writer that writes nothing): it no longer counts as
        pending, and its device buffer is let go."""
        self._make = self._source = self._event = None

    def result(self) -> Any:
        """The payload: made from the host copy on the first call, the same afterwards; the
        error of making it is raised by every call. Two threads asking at once (the writer's,
        and a caller at the bound) make it once: the second waits for the first."""
        while self._make is not None:
            me = threading.get_ident()
            if _making.setdefault(id(self), me) != me:  # another thread makes it
                time.sleep(0.0005)
                continue
            try:
                make = self._make
                if make is not None:  # not made while this thread waited to claim it
                    try:
                        self._value = make(self._host())
                    except BaseException as exc:
                        self._error = exc
                    self._make = self._source = self._event = None
            finally:
                del _making[id(self)]
        if self._error is not None:
            raise self._error
        return self._value

    def _host(self) -> np.ndarray:
        """The value on the host, waiting for the device to finish it."""
        source = self._source
        if self._event is not None:  # torch CUDA: the non-blocking copy into pinned memory
            self._event.synchronize()
            return _from_torch(source)
        if type(source) is np.ndarray:  # read in the call: the value was computed
            return source
        try:
            return np.asarray(source)
        except RuntimeError as exc:
            if not source.is_deleted():
                raise
            label = self.label
            where = "" if label is None else f" as {label[0]!r} at step {label[1]}"
            message = (
                f"the jax value logged{where} was deleted or donated (jax.jit donate_argnums) "
                "after the call and before its step had computed it, so it is not written. "
                "Log it once computed, log a copy (jnp.copy(x)), or set "
                "tallyboard.values.COPY_DEVICE_VALUES = True (each call then copies such a "
                "value on its device)"
            )
            # Each loss is warned of; a sink raises only its first error from a later call.
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            raise DeviceValueLost(message) from exc


class PendingFloat(Pending):
    """A :class:`Pending` whose payload is a Python float (:func:`defer_float` with no
    ``wrap``): a value a writer may reduce across ranks (``reduce=``) without waiting for it."""

    __slots__ = ()


def _pending_of(make: Callable[[np.ndarray], Any]) -> type[Pending]:
    return PendingFloat if make is _to_number else Pending


def _start_jax(
    values: Sequence[Any], nbytes: list[int] | None = None, scalars: bool = False
) -> list[tuple[Any, int]]:
    """Where to read jax ``values`` from, with their sizes: a host copy made now for a value
    already computed; for one still being computed, a reference the writer's side reads (with
    :data:`COPY_DEVICE_VALUES`, a copy on its device, made in one dispatch for all, that
    outlives a later ``delete()`` or donation of the original). ``nbytes``: each value's size
    when the caller knows it (every look at a jax value costs while a step runs); ``scalars``:
    every value holds one element."""
    jax = sys.modules["jax"]
    tracer = jax.core.Tracer
    # A value already computed is read now (a copy on the host, waiting for nothing: safe from
    # a later delete() or donation); one still being computed is kept by reference (no
    # copy_to_host_async: on the CPU backend it cost the caller 0.09 ms while a step ran, and
    # the writer's np.asarray makes the same copy once the value is computed) or, with
    # COPY_DEVICE_VALUES, copied on its device first. A deleted value raises jax's error here.
    out = []
    later = []
    for i, value in enumerate(values):
        if isinstance(value, tracer):
            raise TypeError(
                f"a traced jax value (shape {tuple(value.shape)}) cannot be logged inside jax.jit, grad "
                "or vmap: return it from the transformed function and log it outside"
            )
        n = int(value.size) * value.dtype.itemsize if nbytes is None else nbytes[i]
        if value.is_ready():
            out.append((np.array(value, copy=True), n))
        else:
            out.append((value, n))
            later.append(i)
    mode = COPY_DEVICE_VALUES
    if later and mode is not True:
        later = [] if scalars or mode is False else [i for i in later if values[i].size > 1]
    if later:
        # A copy into a new buffer. device_put, not a jitted identity: on the CPU backend the
        # identity's dispatch often waited for its still-running input (p90 1.5-9 ms a call).
        copies = jax.device_put([values[i] for i in later], may_alias=False)
        for i, copy in zip(later, copies):
            copy.copy_to_host_async()
            out[i] = (copy, out[i][1])
    return out


def _start_torch_cuda(value: Any) -> tuple[Any, int, Any]:
    """Untested here (no CUDA device): a non-blocking copy into pinned host memory, ordered on
    the tensor's current stream, and an event the writer's side waits on."""
    torch = sys.modules["torch"]
    tensor = value.detach()
    host = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu", pin_memory=True)
    host.copy_(tensor, non_blocking=True)
    event = torch.cuda.Event()
    event.record(torch.cuda.current_stream(tensor.device))
    return host, host.numel() * host.element_size(), event


def defer_device(
    make: Callable[[np.ndarray], Any] | Sequence[Callable[[np.ndarray], Any]],
    values: Sequence[Any],
) -> list[Pending]:
    """Start the host copies of device ``values`` and return one :class:`Pending` each, whose
    ``result()`` is ``make(np.asarray(value))`` (``make`` may be a list, one per value):
    the host array is the same array ``np.asarray`` gives.

    The call returns without waiting for the device. A value already computed is copied to the
    host now. One still being computed is, as :data:`COPY_DEVICE_VALUES` says, copied on its
    device (jax: one ``device_put`` for all), so deleting or donating the original afterwards
    loses nothing, or kept by reference: deleted or donated before the writer reads it, it
    makes ``result()`` raise :class:`DeviceValueLost`.
    At most :data:`MAX_PENDING_DEVICE_VALUES` may be pending: beyond it the oldest is
    materialised here, in the caller.

    Raises:
        TypeError: A value is a jax tracer (logged inside ``jax.jit``).
    """
    makes = [make] * len(values) if callable(make) else list(make)
    if len(makes) != len(values):
        raise ValueError(f"make: one per value, got {len(makes)} for {len(values)} values")
    return _defer(makes, values, None)


def _defer(
    makes: Sequence[Callable[[np.ndarray], Any]], values: Sequence[Any], nbytes: list[int] | None
) -> list[Pending]:
    """:func:`defer_device` with one ``make`` per value (and, when known, their sizes)."""
    if nbytes is not None:  # jax scalars only, their sizes known (defer_floats): the common case
        out = [
            _pending_of(m)(m, *c) for m, c in zip(makes, _start_jax(values, nbytes, scalars=True))
        ]
    else:
        jax_values = [v for v in values if not type(v).__module__.startswith("torch")]
        jax_copies = iter(_start_jax(jax_values)) if jax_values else iter(())
        out = []
        for value, maker in zip(values, makes, strict=True):
            if type(value).__module__.startswith("torch"):
                out.append(_pending_of(maker)(maker, *_start_torch_cuda(value)))
            else:
                out.append(_pending_of(maker)(maker, *next(jax_copies)))
    _pending.extend(map(weakref.ref, out))
    _make_room()  # every call
    return out


def defer_float(
    value: Any, arg: str = "value", wrap: Callable[[float], Any] | None = None
) -> Pending:
    """:func:`to_float` of a device value without waiting for it: its shape and dtype are
    checked in the call (one element, real), the number is made on the writer's side (and
    passed through ``wrap`` when given). bfloat16 and the other small floats read exactly.

    Raises:
        ValueError: ``value`` holds more or fewer than one element.
        TypeError: ``value`` is not real (complex, bool is fine as for to_float).
    """
    return defer_floats([(value, arg, wrap)])[0]


def defer_floats(
    items: Sequence[tuple[Any, str | tuple[str, Any], Callable[[float], Any] | None]],
) -> list[Pending]:
    """:func:`defer_float` of several ``(value, arg, wrap)`` at once: one copy on the device
    for all of them (a step's metrics cost one dispatch). ``arg`` may be ``(name, key)`` for an
    entry of a mapping argument, named ``name[key]`` in an error (the name made only then)."""
    if COPY_DEVICE_VALUES is not True:
        # The common case, jax arrays of types seen before and not copied on their device, in
        # as few Python steps as can be: right after a step is dispatched, every line of the
        # call runs on cold caches and costs microseconds (see docs/jax.md, "Measured").
        out: list[Pending] = []
        for value, arg, wrap in items:
            tp = type(value)
            if tp not in _jax_types or tp in _tracer_types:
                break  # a CUDA tensor, a tracer, a type not seen yet: the general road
            aval = value.aval  # one look gives shape and dtype
            shape, dtype = aval.shape, aval.dtype
            if not (shape == () or math.prod(shape) == 1) or not (
                dtype.kind in "biuf" or "float" in dtype.name
            ):
                _check_one_real(shape, dtype, arg)  # raises
            # A value already computed is read now, safe from a later delete() or donation.
            source = np.array(value, copy=True) if value.is_ready() else value
            if wrap is None:
                out.append(PendingFloat(_to_number, source, dtype.itemsize))
            else:
                out.append(Pending(_number_maker(wrap), source, dtype.itemsize))
        else:
            _pending.extend(map(weakref.ref, out))
            n = len(_pending)
            if n > _TIDY_AT or n > MAX_PENDING_DEVICE_VALUES:
                _make_room()
            return out
    makes = []
    nbytes: list[int] | None = []
    for value, arg, wrap in items:
        tp = type(value)
        if tp in _jax_types or not tp.__module__.startswith("torch"):
            aval = getattr(value, "aval", value)
            shape, dtype = aval.shape, aval.dtype
            _check_one_real(shape, dtype, arg)
            if nbytes is not None:
                nbytes.append(dtype.itemsize)
        else:  # a CUDA tensor
            if value.numel() != 1:
                raise ValueError(
                    f"{_arg_name(arg)} must hold exactly one element, got shape {tuple(value.shape)}"
                )
            if value.is_complex():
                raise TypeError(f"{_arg_name(arg)} must be a real number, got dtype {value.dtype}")
            nbytes = None
        makes.append(_to_number if wrap is None else _number_maker(wrap))
    return _defer(makes, [value for value, _, _ in items], nbytes)


def _check_one_real(shape: tuple[int, ...], dtype: Any, arg: str | tuple[str, Any]) -> None:
    """Raise ValueError unless ``shape`` holds one element; TypeError unless ``dtype`` is real (a
    bool or integer, a float of any width, bfloat16 too)."""
    if not (shape == () or math.prod(shape) == 1):
        raise ValueError(
            f"{_arg_name(arg)} must hold exactly one element, got shape {tuple(shape)}"
        )
    if not (dtype.kind in "biuf" or "float" in dtype.name):
        raise TypeError(f"{_arg_name(arg)} must be a real number, got dtype {dtype}")


def _arg_name(arg: str | tuple[str, Any]) -> str:
    """``arg``, or ``name[key]`` for ``(name, key)``."""
    return arg if type(arg) is str else f"{arg[0]}[{arg[1]!r}]"


def _to_number(host: np.ndarray) -> float:
    """The one number of a host array, as a Python float (exact for every real dtype)."""
    return float(host.reshape(()).astype(np.float64))


def _number_maker(wrap: Callable[[float], Any]) -> Callable[[np.ndarray], Any]:
    def make(host: np.ndarray) -> Any:
        return wrap(_to_number(host))

    return make


def emit_pending(
    writer: Any, kind: str, tag: Any, pending: Pending, global_step: Any, walltime: Any
) -> None:
    """Hand ``pending`` to ``writer.emit_deferred``; a writer without it (a face that has no
    deferred path) gets the value now, through ``emit``."""
    emit_deferred = getattr(writer, "emit_deferred", None)
    if emit_deferred is not None:
        emit_deferred(kind, tag, pending, global_step, walltime)
    else:
        writer.emit(kind, tag, pending.result(), global_step, walltime)


class _Capture:
    """Stands in for a writer while a kind's method turns host values into its payload."""

    __slots__ = ("payload",)

    def __init__(self) -> None:
        self.payload: Any = None

    def emit(
        self, kind: str, tag: Any, payload: Any, global_step: Any = None, walltime: Any = None
    ) -> None:
        self.payload = payload


def defer_call(
    writer: Any,
    kind: str,
    tag: Any,
    value: Any,
    global_step: Any,
    walltime: Any,
    method: Callable[[Any, np.ndarray], None],
) -> None:
    """Log device ``value`` through a kind's method without waiting for it: ``method(w,
    host_array)`` (a closure calling the method with its other arguments, ending in
    ``w.emit(kind, ...)``) runs on the writer's side on the host copy, and what it emits is
    written under ``tag``, ``global_step`` and ``walltime`` (``None``: now, at this call).
    Errors it raises there are reported by a later call."""

    def make(host: np.ndarray) -> Any:
        capture = _Capture()
        method(capture, host)
        return capture.payload

    (pending,) = defer_device(make, [value])
    emit_pending(writer, kind, tag, pending, global_step, walltime)


def _make_room() -> None:
    """Drop from the front what the writers have made or let go; then make the oldest until in
    bound."""
    while _pending:
        oldest = _pending[0]()
        if oldest is not None and not oldest.done and len(_pending) <= MAX_PENDING_DEVICE_VALUES:
            return
        _pending.popleft()
        if oldest is not None and not oldest.done:
            try:
                oldest.result()
            except Exception:
                pass  # raised again where the writer's thread makes it, with the sink's report
