"""The ``text`` kind: ``add_text`` and ``add_value("text", ...)``; TensorBoard renders markdown."""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl
from tallyboard.values import check_text, check_utf8_array

_SUFFIX = "/text_summary"  # torch's text tag: <tag>/text_summary


def _convert(value: Any, arg: str = "value") -> Any:
    """A str, or a table: an array (or nested lists) of str of any shape, as a read-only
    numpy array of str (TensorBoard's TEXT tab shows a 1-D or 2-D one as a table)."""
    if isinstance(value, str):
        return check_text(value, arg)
    import numpy as np

    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.array(value, dtype=object if not isinstance(value, np.ndarray) else None)
        if arr.dtype == object and all(isinstance(s, str) for s in arr.reshape(-1)):
            arr = arr.astype(str) if arr.size else np.empty(arr.shape, "U1")
        if arr.dtype.kind == "U":
            arr = check_utf8_array(np.array(arr), arg)
            arr.flags.writeable = False
            return arr
    raise TypeError(
        f"{arg} must be a str or an array of str (a table), got {type(value).__name__}: "
        f"{value!r:.80}"
    )


def strings_of(text: Any) -> list[str]:
    """The strings of a text payload, in row-major order (one for a str)."""
    return [text] if isinstance(text, str) else [str(s) for s in text.reshape(-1)]


def add_text(
    writer: Any, tag: str, text_string: str, global_step: Any = None, walltime: Any = None
) -> None:
    """Log a piece of text, shown in the TEXT tab and rendered as Markdown.

    Written as torch writes it: a string tensor under the tag ``<tag>/text_summary``, the name
    the TEXT tab lists. TensorBoard renders Markdown, so a single newline does not break a line
    (end a line with two spaces, or leave an empty line), and pipe tables render as tables.

    Args:
        tag: The text's name, a str (written as ``<tag>/text_summary``).
        text_string: The text, a str (any length, UTF-8).
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``text_string`` is not a str (torch raises AttributeError); a non-str ``tag``
            beside a str ``text_string`` gets a message saying the two look swapped.
        ValueError: The text or tag holds a lone surrogate (it cannot be UTF-8).

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/text") as writer:
        ...     writer.add_text("notes", "**lr** 0.1, batch 64  \\nno augmentation", 0)
        ...     writer.add_text("table", "| epoch | acc |\\n|---|---|\\n| 1 | 0.91 |", 1)
    """
    if type(tag) is not str or type(text_string) is not str:
        from tallyboard.values import raise_if_swapped

        raise_if_swapped("add_text", tag, text_string, "text_string")
    writer.emit("text", tag, _convert(text_string, "text_string"), global_step, walltime)


def encode_tfevents(tag: str, step: int | None, wall_time: float, text: Any) -> bytes:
    """torch's layout: tag ``<tag>/text_summary``, a DT_STRING tensor of shape [1] (a table:
    of the array's shape)."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata, shape

    dims = [1] if isinstance(text, str) else list(text.shape)
    tensor = TensorProto(
        dtype=DT_STRING,
        tensor_shape=shape(dims),
        string_val=[s.encode("utf-8") for s in strings_of(text)],
    )
    value = SummaryValue(tag=tag + "/text_summary", metadata=metadata("text"), tensor=tensor)
    return summary_event(step, wall_time, [value])


def decode_tfevents(value: Any, step: int, wall_time: float) -> Any:
    """A text ``Summary.Value`` (plugin ``text``, DT_STRING tensor of any shape) as the kind's
    payload: the str of a tensor of shape ``[1]`` (what ``add_text`` writes), else a read-only
    numpy array of str of the tensor's shape, so a table written as a 2-D tensor keeps its rows
    and columns (:func:`to_row` gives its row).

    The tag keeps the writer's spelling (torch and tallyboard add ``/text_summary``; the kind's
    ``log_tag`` takes it off again when the payload is written back).
    """
    if value.metadata.plugin_data.plugin_name != "text" or not value.HasField("tensor"):
        return None
    from tallyboard_tfevents.proto import DT_STRING
    from tallyboard_tfevents.tensors import shape_of, strings

    if value.tensor.dtype != DT_STRING:
        return None
    texts = [s.decode("utf-8", "replace") for s in strings(value.tensor)]
    dims = shape_of(value.tensor)
    if list(dims) == [1]:  # one string, as add_text writes it: the str
        return texts[0]
    return table_of(texts, dims)


def table_of(texts: list[str], shape: Any) -> Any:
    """``texts`` (row-major) as a text payload of ``shape``: a read-only numpy array of str."""
    import numpy as np

    array = np.array(texts, dtype=str).reshape(shape) if texts else np.empty(shape, "U1")
    array.flags.writeable = False
    return array


def to_row(text: Any) -> dict[str, Any]:
    """A text payload as a row of ``tallyboard.read``'s table: ``value`` (the string; the
    strings joined with newlines when there are several), ``shape`` (the tensor's dimensions,
    as the sinks write it: ``[1]`` for a str) and ``strings`` (a numpy array of str of that
    shape)."""
    import numpy as np

    strings = np.array([text]) if isinstance(text, str) else text
    return {
        "value": "\n".join(strings_of(text)),
        "shape": list(strings.shape),
        "strings": strings,
    }


def log_tag(tag: str) -> str:
    """The tag a text read under ``tag`` is logged under: without the ``/text_summary`` that
    :func:`encode_tfevents` appends."""
    return tag.removesuffix(_SUFFIX) or tag


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="text",
            convert=_convert,
            methods={"add_text": add_text},
            description="markdown text",
            payload=(str, "numpy:ndarray"),  # what _convert returns; numpy imported on first use
            to_row=to_row,
            log_tag=log_tag,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    register("text", "tfevents", encode_tfevents)


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "text", decode_tfevents)
