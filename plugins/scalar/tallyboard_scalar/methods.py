"""torch's scalar methods on the writer."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tallyboard.faces.hints import describe, raise_if_swapped
from tallyboard.values import (
    check_flag,
    check_step,
    check_tag,
    check_text,
    check_walltime,
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
    """Log one number under ``tag`` (torch's signature)."""
    if type(scalar_value) is float:
        value = scalar_value
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
    """Log several numbers on one chart: each key becomes the sub-run ``<main_tag>_<key>``."""
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
