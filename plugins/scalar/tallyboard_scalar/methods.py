"""torch's scalar methods on the writer."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tallyboard.values import (
    check_flag,
    check_step,
    check_tag,
    check_text,
    check_walltime,
    defer_float,
    describe,
    emit_pending,
    on_device,
    raise_if_swapped,
    to_float,
)


@dataclass(frozen=True)
class TensorScalar:
    """A scalar to be written as a rank-0 tensor (torch's ``new_style=True``)."""

    value: float
    double_precision: bool = False


def add_scalar(
    writer: Any,
    tag: str,
    scalar_value: Any,
    global_step: Any = None,
    walltime: Any = None,
    new_style: bool = False,
    double_precision: bool = False,
) -> None:
    """Log one number under ``tag`` at ``global_step``: a point of a line in the SCALARS tab.

    The value is written as torch writes it, a 32-bit float (``simple_value``), so TensorBoard
    shows the same chart for the same calls. ``new_style=True`` writes it as a rank-0 tensor
    instead (TensorBoard loads it through the scalars plugin alike), and with
    ``double_precision=True`` that tensor keeps all 64 bits. NaN and infinities are written as
    they are. The call checks and queues the value; a background thread writes it (see
    :meth:`flush`).

    Args:
        tag: The chart's name, a str such as ``"loss/train"`` (TensorBoard groups charts by the
            part before the first ``/``). Written as given.
        scalar_value: One number: a Python int, float or bool (``True`` is 1.0), a NumPy scalar,
            or an array or tensor (any device) holding exactly one element, of any shape.
        global_step: The x position of the point: an int within int64 (Python, NumPy or a 0-d
            integer tensor). Default ``None`` writes no step, which TensorBoard reads as 0.
            Unlike torch, which truncates a float step (2.7 becomes 2), a float is a TypeError.
        walltime: The point's time in seconds since the epoch, a finite number. Default
            ``None``: ``time.time()`` at the call.
        new_style: Write a rank-0 tensor with the ``scalars`` plugin's metadata instead of a
            ``simple_value``. Default ``False``.
        double_precision: With ``new_style=True``, write a float64 tensor (0.1 reads back as
            exactly 0.1) instead of a float32 one. Ignored otherwise. Default ``False``.

    Raises:
        TypeError: ``tag`` is not a str (a message says so when tag and value look swapped,
            ``add_scalar(0.5, "loss")``); ``scalar_value`` is not a number (a str, None, a
            complex or object array); ``global_step`` is not an int.
        ValueError: ``scalar_value`` holds more or fewer than one element; ``global_step`` is
            outside int64; ``walltime`` is not finite; ``tag`` holds a lone surrogate (no
            UTF-8).

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/scalar") as writer:
        ...     for step in range(100):
        ...         writer.add_scalar("loss/train", 1 / (step + 1), step)
    """
    if type(scalar_value) is float:
        value = scalar_value
    elif on_device(scalar_value):  # a jax.Array, a CUDA tensor: read on the writer's side
        if new_style is False or not check_flag(new_style, "new_style"):
            pending = defer_float(scalar_value, "scalar_value")
        else:
            double = check_flag(double_precision, "double_precision")
            pending = defer_float(scalar_value, "scalar_value", lambda v: TensorScalar(v, double))
        emit_pending(writer, "scalar", tag, pending, global_step, walltime)
        return
    else:
        try:
            value = to_float(scalar_value, "scalar_value")
        except TypeError:
            raise_if_swapped("add_scalar", tag, scalar_value, "scalar_value")
            raise
        if type(global_step) is float:
            _swapped_step(scalar_value, global_step)
    if new_style is False or not check_flag(new_style, "new_style"):
        writer.emit("scalar", tag, value, global_step, walltime)
    else:
        double = check_flag(double_precision, "double_precision")
        writer.emit("scalar", tag, TensorScalar(value, double), global_step, walltime)


def add_scalars(
    writer: Any,
    main_tag: str,
    tag_scalar_dict: dict[str, Any],
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """Log several numbers at one step, drawn as lines of one chart: one line per key.

    As torch does, each key is its own run: the values go to sub-runs
    ``<log_dir>/<main_tag>_<key>`` (a ``/`` in ``main_tag`` becomes ``_``), each under the tag
    ``main_tag``, so TensorBoard draws one chart ``main_tag`` with a line per run ``..._<key>``.
    The main run gets nothing for ``main_tag``. Every value of one call shares one wall time.
    The values are also kept in memory for :meth:`export_scalars_to_json` (tensorboardX's),
    until it is called.

    Args:
        main_tag: The chart's name, a str; it also names the sub-runs.
        tag_scalar_dict: ``{key: number}``: one number per line (any value :meth:`add_scalar`
            takes). A key is a str and ends a folder name (a ``/`` in it nests a folder);
            nothing is ever created outside ``log_dir``.
        global_step: The x position of the points: an int within int64. Default ``None`` writes
            no step (read as 0).
        walltime: Seconds since the epoch, a finite number, for every value. Default ``None``:
            ``time.time()`` at the call.

    Raises:
        TypeError: ``main_tag`` is not a str (a message says so when ``main_tag`` and
            ``tag_scalar_dict`` look swapped); ``tag_scalar_dict`` is not a dict, a key is not a
            str or a value is not a number; ``global_step`` is not an int.
        ValueError: A key or ``main_tag`` cannot be a folder name (a control character such as
            NUL, a lone surrogate); a value holds more than one element; ``global_step`` is
            outside int64; ``walltime`` is not finite.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/scalars") as writer:
        ...     for step in range(10):
        ...         writer.add_scalars("accuracy", {"train": 0.5 + step / 20, "val": 0.5}, step)
        ... # TensorBoard: one chart "accuracy", runs scalars/accuracy_train and accuracy_val
    """
    if not isinstance(main_tag, str) and isinstance(tag_scalar_dict, str):
        raise TypeError(
            f"main_tag and tag_scalar_dict look swapped: main_tag got {describe(main_tag)} and "
            f"tag_scalar_dict the str {tag_scalar_dict!r}; call add_scalars(main_tag, "
            "tag_scalar_dict, global_step), e.g. add_scalars('loss', {'train': 0.5}, 3)"
        )
    check_tag(main_tag, "main_tag")
    if not hasattr(tag_scalar_dict, "items"):
        raise TypeError(
            f"tag_scalar_dict must be a dict of str to number, got {type(tag_scalar_dict).__name__}"
        )
    step = check_step(global_step)
    walltime = check_walltime(walltime)  # one wall time for every key, as torch does
    values = []
    for key, raw in tag_scalar_dict.items():
        if not isinstance(key, str):
            raise TypeError(f"tag_scalar_dict keys must be str, got {type(key).__name__}: {key!r}")
        check_text(key, "tag_scalar_dict key")
        values.append((key, to_float(raw, f"tag_scalar_dict[{key!r}]")))
    run_prefix = main_tag.replace("/", "_")
    children = [
        (writer.child(f"{run_prefix}_{key}", arg=f"tag_scalar_dict key {key!r}"), v)
        for key, v in values
    ]
    if walltime is None:
        walltime = time.time()
    remembered = writer.scalar_dict  # tensorboardX's export_scalars_to_json reads these
    for (child, value), (key, _) in zip(children, values):
        child.emit("scalar", main_tag, value, step, walltime)
        remembered.setdefault(f"{writer.log_dir}/{main_tag}/{key}", []).append(
            [walltime, step, value]
        )


def _swapped_step(scalar_value: Any, global_step: float) -> None:
    """A fractional step beside an int value: most likely ``add_scalar(tag, step, value)``."""
    if type(scalar_value) is int and not global_step.is_integer():
        raise TypeError(
            f"global_step must be an int, got float {global_step!r}, and scalar_value got the "
            f"int {scalar_value!r}: scalar_value and global_step look swapped; the value comes "
            f"first: add_scalar(tag, scalar_value, global_step)"
        )
