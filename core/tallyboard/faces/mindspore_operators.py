"""The values MindSpore's own summary operators leave for a record, taken as MindSpore takes them.

MindSpore's ``ops.ScalarSummary``, ``ImageSummary``, ``TensorSummary`` and ``HistogramSummary``
write nothing themselves: inside a Cell they leave their value where MindSpore's
``SummaryRecord.record()`` collects it. MindSpore 2.10 keeps two such places:

- PyNative mode: the operator's ``__call__`` appends ``[operator name, tag, tensor]`` to the list
  ``mindspore.ops.operations.debug_ops.SUMMARY_TENSOR_CACHE``.
- GRAPH_MODE: the compiled graph's summary kernels call back into Python
  (``mindspore.train.callback._callback.summary_cb_for_save_op``), which stores
  ``{"tag[:Scalar]": tensor, ...}`` into the dict
  ``mindspore.train.summary.summary_record.SUMMARY_TENSOR_CACHE``; MindSpore's own
  ``_get_summary_tensor_data()`` swaps that dict for an empty one under MindSpore's lock.

No flag has to be set while a record is open: both are filled whenever an operator runs. (On
Ascend, MindSpore's ``record()`` first waits for the device's summary channel; other targets,
which this module serves, have no such wait.) MindSpore's ``record()`` in ``'train'`` mode moves
the list into the dict (checking each entry, and emptying the list even when a check fails),
takes the dict and adds every value with its tag; in ``'eval'`` mode it touches neither. Its
constructor drops what the dict holds and leaves the list.

This module reads the three names above (``INTERNALS``, each checked by a test) and nothing
else of MindSpore. It never imports MindSpore: when the program has not imported it, there is
nothing to take and every function returns at once.
"""

from __future__ import annotations

import logging
import re
import sys
from math import prod
from typing import Any

from tallyboard.faces.mindspore_values import is_tensor

__all__ = ["INTERNALS", "pending", "take", "discard_graph_values"]

logger = logging.getLogger("tallyboard.faces.summary_record")

_RECORD = "mindspore.train.summary.summary_record"
_DEBUG_OPS = "mindspore.ops.operations.debug_ops"
#: The MindSpore internals this module relies on: (module, name, what it is).
INTERNALS = (
    (_DEBUG_OPS, "SUMMARY_TENSOR_CACHE", "list of [operator name, tag, tensor] (PyNative)"),
    (_RECORD, "SUMMARY_TENSOR_CACHE", "dict 'tag[:Type]' -> tensor (GRAPH_MODE callback)"),
    (_RECORD, "_get_summary_tensor_data", "function: swaps that dict for an empty one"),
)
#: Operator name -> the suffix MindSpore appends to its tag.
_SUFFIXES = {
    "ScalarSummary": "[:Scalar]",
    "ImageSummary": "[:Image]",
    "TensorSummary": "[:Tensor]",
    "HistogramSummary": "[:Histogram]",
}
_KEY_RE = re.compile(r"(.+)\[:(.+)\]")
_modules = sys.modules


def pending() -> bool:
    """Whether MindSpore's summary operators left values (False when MindSpore is not imported)."""
    record = _modules.get(_RECORD)
    if record is None:
        return False
    if getattr(record, "SUMMARY_TENSOR_CACHE", None):
        return True
    debug = _modules.get(_DEBUG_OPS)
    return debug is not None and bool(getattr(debug, "SUMMARY_TENSOR_CACHE", None))


def discard_graph_values() -> None:
    """Drop the values graph-mode operators cached before a record opened (MindSpore's
    constructor does the same; PyNative values stay and go out with the first record)."""
    record = _modules.get(_RECORD)
    if record is not None and getattr(record, "SUMMARY_TENSOR_CACHE", None):
        record._get_summary_tensor_data()


def _check(op_name: str, tag: Any, value: Any) -> None:
    """MindSpore's checks of a PyNative operator's entry, with MindSpore's messages."""
    if not isinstance(tag, str) or not tag:
        raise TypeError(f'For "{op_name}", the name must be valid string, but got "{tag}".')
    if not is_tensor(value):
        raise TypeError(
            f'For "{op_name}", the parameter "value" expect to be Tensor, '
            f"but got {type(value).__name__}"
        )
    shape = tuple(value.shape)
    plugin = op_name.split("Summary")[0].lower()
    if plugin == "scalar":
        if prod(shape) != 1:
            raise ValueError(
                f'For "{op_name}", the v rank must be less than or equal to 1, but got {shape[0]}.'
            )
    elif plugin == "image":
        if len(shape) != 4:
            raise ValueError(f'For "{op_name}", the tensor seems not to hold a valid image.')
    elif plugin in ("tensor", "histogram") and not shape:
        raise ValueError(f'For "{op_name}", the value should not be empty.')


def take() -> list[tuple[str, str, Any]]:
    """Remove MindSpore's operator values and return them as ``(plugin, tag, tensor)``.

    In MindSpore's order: the graph-mode values first, then the PyNative ones; a later value of
    the same tag and operator replaces an earlier one in place. PyNative entries are checked
    first, as MindSpore's ``record()`` checks them: a bad one raises MindSpore's TypeError or
    ValueError and the PyNative list is lost (MindSpore empties it too), while the graph-mode
    values stay for the next record. A key that is not ``TAG[:TYPE]`` is logged and skipped.
    """
    record = _modules.get(_RECORD)
    if record is None:
        return []
    debug = _modules.get(_DEBUG_OPS)
    listed = getattr(debug, "SUMMARY_TENSOR_CACHE", None) if debug is not None else None
    if listed:
        debug.SUMMARY_TENSOR_CACHE = []  # type: ignore[union-attr]
        for op_name, tag, value in listed:
            _check(op_name, tag, value)
    cached = (
        record._get_summary_tensor_data() if getattr(record, "SUMMARY_TENSOR_CACHE", None) else {}
    )
    # key -> (plugin, tag, value); a PyNative entry's key is its tag and the operator's suffix,
    # which is what parsing the key would give back
    merged: dict[str, tuple[str, str, Any]] = {}
    for key, value in cached.items():
        match = _KEY_RE.match(key) if isinstance(key, str) else None
        if match is None:
            logger.warning("The name(%r) is invalid, expected 'TAG[:TYPE]'.", key)
            continue
        tag, type_name = match.groups()
        merged[key] = (type_name.lower(), tag, value)
    if listed:
        for op_name, tag, value in listed:
            suffix = _SUFFIXES.get(op_name)
            if suffix is None:  # not a summary operator MindSpore knows: the key is the tag
                match = _KEY_RE.match(tag)
                if match is None:
                    logger.warning("The name(%r) is invalid, expected 'TAG[:TYPE]'.", tag)
                    continue
                merged[tag] = (match.group(2).lower(), match.group(1), value)
            else:
                merged[tag + suffix] = (suffix[2:-1].lower(), tag, value)
    return list(merged.values())
