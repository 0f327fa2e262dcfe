"""MindSpore-style summary operators: ``ScalarSummary()("loss", value)`` and friends.

Public as :mod:`tallyboard.ops` (MindSpore's ``mindspore.ops`` path); this module keeps working.

As in MindSpore, an operator call puts its value into a process-wide cache under
``"<name>[:Scalar]"`` (``[:Image]``, ``[:Tensor]``, ``[:Histogram]``); a later value for the same
key replaces the earlier one. ``SummaryRecord.record()`` in ``'train'`` mode drains the cache
into the step it records; in ``'eval'`` mode it leaves the cache alone. Values are validated
when the operator is called (MindSpore checks them later, at ``record()``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tallyboard.faces import mindspore_values
from tallyboard.values import check_utf8, to_array

__all__ = ["ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary", "to_numpy"]

_lock = threading.Lock()
_cache: dict[str, np.ndarray] = {}
#: NumPy types MindSpore summary files can hold.
SUPPORTED_TYPES = frozenset(
    [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    + [np.float16, np.float32, np.float64]
)


def to_numpy(
    plugin: str,
    value: Any,
    owner: str = "SummaryRecord",
    copy: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """A NumPy copy of ``value`` checked for ``plugin`` as MindSpore checks it (``copy``: how to
    copy an array, ``np.copy`` by default; the face passes :class:`~.snapshots.Snapshots`).

    Accepts MindSpore Tensors, NumPy arrays and scalars, torch tensors, Python numbers and other
    array-likes (``__array__``, DLPack); anything else is a TypeError. Shapes: scalar needs one
    element, image 4 dimensions, tensor and histogram at least one dimension (ValueError).
    """
    if type(value) is np.ndarray:
        array = value.copy() if copy is None else copy(value)
    elif mindspore_values.is_tensor(value):
        array = mindspore_values.to_numpy(value)
        if copy is not None:  # its own bytes are dropped at once
            array = copy(array)
    else:
        try:
            if isinstance(value, (dict, set, frozenset)):
                raise TypeError
            array = to_array(value, "value", allow_empty=True)
        except TypeError:
            raise TypeError(
                f'For "{owner}", the parameter "value" expect to be Tensor, but got {type(value).__name__}'
            ) from None
    if array.dtype.type not in SUPPORTED_TYPES:
        raise TypeError(
            f'For "{owner}", the parameter "value" has dtype {array.dtype}; expect one of bool, '
            "int8-int64, uint8-uint64, float16, float32, float64"
        )
    if plugin == "scalar":
        if array.size != 1:
            got = len(array) if array.ndim else array.size
            raise ValueError(
                f'For "{owner}", the v rank must be less than or equal to 1, but got {got}.'
            )
    elif plugin == "image":
        if array.ndim != 4:
            raise ValueError(f'For "{owner}", the tensor seems not to hold a valid image.')
    elif array.ndim == 0:
        raise ValueError(f'For "{owner}", the value should not be empty.')
    return array


class _SummaryOp:
    """Base of the summary operators: ``op(name, value)`` caches ``value`` for the next record."""

    type_name = ""

    def _cache(self, name: str, value: Any) -> None:
        owner = f"{self.type_name}Summary"
        if not isinstance(name, str):
            raise TypeError(
                f"For '{owner}', the type of 'name' should be 'str', but got type '{type(name).__name__}'."
            )
        if not name:
            raise ValueError(f"For '{owner}', the name must be valid string, but got '{name}'.")
        check_utf8(name, "name")
        array = to_numpy(self.type_name.lower(), value, owner)
        with _lock:
            _cache[f"{name}[:{self.type_name}]"] = array

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ScalarSummary(_SummaryOp):
    """Log one number per step, as ``mindspore.ops.ScalarSummary`` does: ``op("loss", loss)``.

    The value waits until the next :meth:`tallyboard.SummaryRecord.record` in ``'train'`` mode,
    which writes it as a scalar with that step (MindInsight shows it as ``<name>/scalar``,
    TensorBoard, with ``tensorboard=True``, as ``<name>``). A later call with the same name
    before the record replaces the value. Use it where MindSpore's operator cannot run (code
    without MindSpore); inside a MindSpore Cell keep ``mindspore.ops.ScalarSummary``, which the
    record collects as well.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, ops
        >>> summary = ops.ScalarSummary()
        >>> with SummaryRecord("runs/ops_scalar") as record:
        ...     for step in range(1, 4):
        ...         summary("loss", np.float32(1 / step))
        ...         ok = record.record(step)
    """

    type_name = "Scalar"

    def __call__(self, name: str, value: Any) -> None:
        """Keep ``value`` as the scalar ``name`` of the next training step's record.

        Args:
            name: The tag, a non-empty str.
            value: One number: a ``mindspore.Tensor``, NumPy array or scalar, torch tensor,
                Python number or array-like of exactly one element (shape ``()``, ``(1,)``,
                ``(1, 1)``, ...), of a bool, int, uint or float dtype; written as float32.

        Raises:
            TypeError: ``name`` not a str; ``value`` not an array-like, or of another dtype.
            ValueError: An empty ``name``; a value of more than one element.

        Example:
            >>> import numpy as np
            >>> from tallyboard import ops
            >>> ops.ScalarSummary()("learning_rate", np.float32(0.01))
        """
        self._cache(name, value)


class ImageSummary(_SummaryOp):
    """Log a batch of images per step, as ``mindspore.ops.ImageSummary`` does.

    The batch, shape ``(N, C, H, W)``, is written by the next training step's
    :meth:`tallyboard.SummaryRecord.record` as one PNG, the images tiled 8 to a row. A later
    call with the same name before the record replaces the value.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, ops
        >>> with SummaryRecord("runs/ops_image") as record:
        ...     ops.ImageSummary()("inputs", np.random.rand(16, 3, 8, 8))  # 2 rows of 8
        ...     ok = record.record(1)
    """

    type_name = "Image"

    def __call__(self, name: str, value: Any) -> None:
        """Keep ``value`` as the images ``name`` of the next training step's record.

        Args:
            name: The tag, a non-empty str.
            value: Images of shape ``(N, C, H, W)``, C 1 (grey) or 3 (RGB), as an array-like
                of a bool, int, uint or float dtype; values in [0, 1] are scaled by 255, others
                from their min-max range. Other channel counts pass here and are dropped with
                an error log when written, as in MindSpore.

        Raises:
            TypeError: ``name`` not a str; ``value`` not an array-like, or of another dtype.
            ValueError: An empty ``name``; a value without exactly 4 dimensions.

        Example:
            >>> import numpy as np
            >>> from tallyboard import ops
            >>> ops.ImageSummary()("inputs", np.zeros((1, 1, 28, 28), np.uint8))
        """
        self._cache(name, value)


class TensorSummary(_SummaryOp):
    """Log a whole array per step, as ``mindspore.ops.TensorSummary`` does.

    The next training step's :meth:`tallyboard.SummaryRecord.record` writes every element (as
    float32, MindSpore's format) with the array's shape and dtype. A later call with the same
    name before the record replaces the value.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, ops
        >>> with SummaryRecord("runs/ops_tensor") as record:
        ...     ops.TensorSummary()("confusion", np.eye(3, dtype=np.int32))
        ...     ok = record.record(1)
    """

    type_name = "Tensor"

    def __call__(self, name: str, value: Any) -> None:
        """Keep ``value`` as the tensor ``name`` of the next training step's record.

        Args:
            name: The tag, a non-empty str.
            value: An array-like of at least one dimension (shape ``(0,)`` too), of a bool,
                int, uint or float dtype.

        Raises:
            TypeError: ``name`` not a str; ``value`` not an array-like, or of another dtype.
            ValueError: An empty ``name``; a 0-dimensional value.

        Example:
            >>> import numpy as np
            >>> from tallyboard import ops
            >>> ops.TensorSummary()("bias", np.zeros(10))
        """
        self._cache(name, value)


class HistogramSummary(_SummaryOp):
    """Log the distribution of an array's values per step, as ``mindspore.ops.HistogramSummary``.

    The next training step's :meth:`tallyboard.SummaryRecord.record` writes MindSpore's
    histogram of the values: up to 90 equal buckets over the finite values, their count, min,
    max and sum, NaN and infinities counted apart. A later call with the same name before the
    record replaces the value.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, ops
        >>> with SummaryRecord("runs/ops_histogram") as record:
        ...     ops.HistogramSummary()("weights", np.random.randn(1000))
        ...     ok = record.record(1)
    """

    type_name = "Histogram"

    def __call__(self, name: str, value: Any) -> None:
        """Keep ``value``'s values as the histogram ``name`` of the next training step's record.

        Args:
            name: The tag, a non-empty str.
            value: An array-like of at least one dimension, of a bool, int, uint or float
                dtype; NaN and infinities are counted, not binned.

        Raises:
            TypeError: ``name`` not a str; ``value`` not an array-like, or of another dtype.
            ValueError: An empty ``name``; a 0-dimensional value.

        Example:
            >>> import numpy as np
            >>> from tallyboard import ops
            >>> ops.HistogramSummary()("gradients", np.random.randn(64, 32))
        """
        self._cache(name, value)


def take() -> dict[str, np.ndarray]:
    """Empty the cache and return what it held (in insertion order)."""
    global _cache
    with _lock:
        data, _cache = _cache, {}
    return data


def pending() -> int:
    """How many values wait in the cache."""
    return len(_cache)
