"""``add_embedding``: the files TensorBoard's projector reads, validated before any is written."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any, NoReturn

import numpy as np
from tallyboard import paths
from tallyboard.values import check_step, check_tag, check_text, to_array
from tallyboard.warn import warn

from . import files

#: WebGL texture limit the projector's sprite must fit in (pixels per side).
MAX_SPRITE_SIDE = 8192
CONFIG_NAME = "projector_config.pbtxt"
_config_lock = threading.Lock()


@dataclass(frozen=True)
class Embedding:
    """A validated embedding, ready to be written: the TSV texts and the sprite PNG."""

    tag: str
    step: int
    subdir: str
    tensors_tsv: bytes
    metadata_tsv: bytes | None
    sprite_png: bytes | None
    sprite_dim: tuple[int, int]  # (width, height) of one image


def escape_tag(tag: str) -> str:
    """torch's directory name for a tag (``%``, ``/``, ``\\`` escaped), made safe as one path component.

    Control characters become ``%xx`` and a tag of ``.`` or ``..`` becomes ``%2e``/``%2e%2e``.
    """
    out = tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")
    if any(
        ord(c) < 32 or c == "\x7f" for c in out
    ):  # NUL, newline...: legal in a tag, not in a name
        out = "".join(f"%{ord(c):02x}" if ord(c) < 32 or c == "\x7f" else c for c in out)
    if out in (".", ".."):
        out = out.replace(".", "%2e")
    return out


def _tag_dir(tag: Any) -> str:
    tag = check_tag(tag, "tag")
    if not tag:
        raise ValueError("tag must not be empty")
    name = escape_tag(tag)
    if len(name.encode("utf-8")) > 255:
        raise ValueError(
            f"tag {tag[:40]!r}... is too long to be a directory name (255 bytes once escaped)"
        )
    return name


_POW10 = np.array(
    [10.0**k for k in range(-40, 60)]
)  # _POW10[k + 40] == 10.0**k, float32 needs -30..53


def _format_float32(mat: np.ndarray) -> bytes:
    """Finite float32 values as ``-d.dddddddde+XX`` (9 significant digits: exact for float32), vectorized."""
    rows, cols = mat.shape
    x = mat.astype(np.float64).ravel()
    ax = np.abs(x)
    nonzero = ax > 0
    e = np.zeros(x.shape, dtype=np.int64)
    e[nonzero] = np.floor(np.log10(ax[nonzero])).astype(np.int64)
    m = np.rint(ax * _POW10[48 - e]).astype(np.int64)
    e += (m >= 10**9).astype(np.int64) - (nonzero & (m < 10**8)).astype(np.int64)  # log10 rounding
    m = np.rint(ax * _POW10[48 - e]).astype(np.int64)
    carry = m >= 10**9  # 9.999999996 rounds up to 10.00000000
    m[carry] //= 10
    e[carry] += 1
    out = np.empty((x.size, 16), dtype=np.uint8)
    out[:, 0] = ord("-")
    q = m.astype(np.uint32)
    ten = np.uint32(10)
    for col in (10, 9, 8, 7, 6, 5, 4, 3, 1):  # last digit first; scalar divisors are vectorized
        nq = q // ten
        out[:, col] = q - nq * ten + ord("0")
        q = nq
    out[:, 2] = ord(".")
    out[:, 11] = ord("e")
    out[:, 12] = np.where(e < 0, ord("-"), ord("+"))
    ae = np.abs(e)
    out[:, 13] = ae // 10 + ord("0")
    out[:, 14] = ae % 10 + ord("0")
    sep = out[:, 15].reshape(rows, cols)
    sep[:] = ord("\t")
    sep[:, -1] = ord("\n")
    keep = np.ones(out.shape, dtype=bool)
    keep[:, 0] = np.signbit(x)
    return out[keep].tobytes()


def format_tsv(mat: np.ndarray) -> bytes:
    """Tab-separated rows; every value reads back exactly at the matrix's precision.

    float32 (the usual case) is formatted with NumPy, 9 significant digits, which is what an exact
    float32 round trip needs; float64, NaN and infinities go through Python's ``%.17g``/``%.9g``.
    """
    if mat.dtype == np.float32 and mat.size and np.isfinite(mat).all():
        return _format_float32(mat)
    digits = "%.17g" if mat.dtype == np.float64 else "%.9g"
    rows, cols = mat.shape
    line = "\t".join([digits] * cols) + "\n"
    return ((line * rows) % tuple(mat.ravel().tolist())).encode("ascii")


def _matrix(mat: Any) -> np.ndarray:
    arr = to_array(mat, "mat")
    if arr.ndim != 2:
        raise ValueError(f"mat must be 2-D (N, D), got shape {tuple(arr.shape)}")
    if arr.dtype.kind == "c":
        raise TypeError("mat must be real, got a complex array")
    return arr.astype(np.float64 if arr.dtype == np.float64 else np.float32, copy=False)


def _cell(value: Any, where: str) -> str:
    text = check_text(str(value), where)
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(
            f"{where} = {text!r} contains a tab or newline, which would break metadata.tsv"
        )
    return text


def _labels(metadata: Any, arg: str = "metadata") -> list[Any]:
    if hasattr(metadata, "tolist") and not isinstance(metadata, (list, tuple)):
        if hasattr(metadata, "detach"):
            metadata = metadata.detach().cpu()
        metadata = metadata.tolist()
    if isinstance(metadata, (str, bytes)) or not isinstance(metadata, Sequence):
        raise TypeError(f"{arg} must be a list of labels, got {type(metadata).__name__}")
    return list(metadata)


def _checked_lines(cells: list[str], what: Callable[[int], str]) -> NoReturn:
    """Raise naming the first cell holding a tab, a newline or a lone surrogate."""
    for i, text in enumerate(cells):
        _cell(text, what(i))
    raise AssertionError(
        "unreachable: a separator was found in the joined text"
    )  # pragma: no cover


def _metadata_tsv(metadata: Any, header: Any, rows: int) -> bytes:
    labels = _labels(metadata)
    if len(labels) != rows:
        raise ValueError(f"metadata has {len(labels)} labels but mat has {rows} rows")
    if header is None:
        cells = [str(label) for label in labels]
        text = "\n".join(cells)
        if "\t" in text or "\r" in text or text.count("\n") != len(cells) - 1:
            _checked_lines(cells, lambda i: f"metadata[{i}]")
        try:
            return (text + "\n").encode("utf-8")
        except UnicodeEncodeError:
            _checked_lines(cells, lambda i: f"metadata[{i}]")
    header = _labels(header, "metadata_header")
    if not header:
        raise ValueError("metadata_header must not be empty")
    lines = ["\t".join(_cell(h, f"metadata_header[{j}]") for j, h in enumerate(header))]
    for i, item in enumerate(labels):
        item = _labels(item) if not isinstance(item, (str, bytes)) else [item]
        if len(item) != len(header):
            raise ValueError(
                f"metadata[{i}] has {len(item)} columns but metadata_header has {len(header)}"
            )
        lines.append("\t".join(_cell(v, f"metadata[{i}][{j}]") for j, v in enumerate(item)))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _to_uint8(images: np.ndarray) -> np.ndarray:
    if images.dtype == np.uint8:
        return images
    if images.dtype == np.bool_:
        return images.astype(np.uint8) * 255
    if images.dtype.kind in "iu":
        return np.clip(images, 0, 255).astype(np.uint8)
    scaled = np.nan_to_num(images.astype(np.float32) * 255.0, nan=0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def sprite(label_img: Any, rows: int) -> tuple[bytes, tuple[int, int]]:
    """The projector's sprite PNG: ceil(sqrt(N)) tiles per side; images may be non-square."""
    images = to_array(label_img, "label_img")
    if images.ndim == 3:
        images = images[:, None]
    if images.ndim != 4:
        raise ValueError(f"label_img must be (N, C, H, W), got shape {tuple(images.shape)}")
    n, c, h, w = images.shape
    if n != rows:
        raise ValueError(f"label_img has {n} images but mat has {rows} rows")
    if c not in (1, 3, 4):
        hint = ""
        if w in (1, 3, 4):
            hint = (
                f"; its shape {tuple(images.shape)} looks like (N, H, W, C), channels last: pass "
                "np.transpose(label_img, (0, 3, 1, 2)) (a torch tensor: "
                "label_img.permute(0, 3, 1, 2))"
            )
        raise ValueError(f"label_img must have 1, 3 or 4 channels (axis 1), got {c}{hint}")
    if images.dtype.kind not in "biuf":
        raise TypeError(f"label_img must be real numbers, got {images.dtype}")
    per_side = math.ceil(math.sqrt(n))
    if per_side * max(h, w) > MAX_SPRITE_SIDE:
        raise ValueError(
            f"the sprite of {n} images of {w}x{h} would be {per_side * w}x{per_side * h} pixels; the "
            f"projector allows at most {MAX_SPRITE_SIDE} per side: use fewer or smaller label images"
        )
    pixels = _to_uint8(images)
    if c == 1:
        pixels = np.repeat(pixels, 3, axis=1)
        c = 3
    canvas = np.zeros((per_side * per_side, c, h, w), dtype=np.uint8)
    canvas[:n] = pixels
    grid = (
        canvas.reshape(per_side, per_side, c, h, w)
        .transpose(0, 3, 1, 4, 2)
        .reshape(per_side * h, per_side * w, c)
    )
    from PIL import Image

    out = BytesIO()
    Image.fromarray(np.ascontiguousarray(grid), "RGBA" if c == 4 else "RGB").save(out, format="PNG")
    return out.getvalue(), (w, h)


def prepare(
    mat: Any,
    metadata: Any = None,
    label_img: Any = None,
    global_step: Any = None,
    tag: str = "default",
    metadata_header: Any = None,
) -> Embedding:
    """Validate and encode everything ``add_embedding`` writes, without touching the disk."""
    name = _tag_dir(tag)
    step = check_step(global_step)
    step = 0 if step is None else step
    if step < 0:
        raise ValueError(f"global_step must be >= 0 for an embedding, got {step}")
    arr = _matrix(mat)
    meta = None if metadata is None else _metadata_tsv(metadata, metadata_header, arr.shape[0])
    if metadata is None and metadata_header is not None:
        raise ValueError("metadata_header was given without metadata")
    png, dim = (None, (0, 0)) if label_img is None else sprite(label_img, arr.shape[0])
    return Embedding(tag, step, f"{step:05d}/{name}", format_tsv(arr), meta, png, dim)


def merge_config(existing: str | None, info: Any) -> bytes:
    """The projector config text with ``info`` added, replacing an entry of the same tensor_name."""
    from google.protobuf import text_format

    from .proto import ProjectorConfig

    config = ProjectorConfig()
    if existing:
        try:
            text_format.Parse(existing, config)
        except text_format.ParseError as exc:
            raise ValueError(
                f"the existing {CONFIG_NAME} cannot be parsed, refusing to overwrite it: {exc}"
            ) from None
    kept = [e for e in config.embeddings if e.tensor_name != info.tensor_name]
    del config.embeddings[:]
    config.embeddings.extend(kept)
    config.embeddings.append(info)
    return text_format.MessageToString(config).encode("utf-8")


def write(log_dir: str, emb: Embedding) -> None:
    """Write the embedding's files and merge its entry into ``projector_config.pbtxt``."""
    from .proto import EmbeddingInfo

    target = paths.resolve_inside(log_dir, paths.safe_relpath(emb.subdir, "tag"), "tag")
    found, is_dir = files.exists(target)
    if found and not is_dir:
        raise FileExistsError(
            f"cannot write the embedding {emb.tag!r}: {target} exists and is not a directory"
        )
    if found:
        warn(
            f"embedding directory {target} exists and is overwritten; pass a new global_step to keep both",
            UserWarning,
        )
    files.makedirs(target)
    info = EmbeddingInfo(
        tensor_name=f"{emb.tag}:{emb.step:05d}", tensor_path=f"{emb.subdir}/tensors.tsv"
    )
    files.write_atomic(paths.join(target, "tensors.tsv"), emb.tensors_tsv)
    if emb.metadata_tsv is not None:
        files.write_atomic(paths.join(target, "metadata.tsv"), emb.metadata_tsv)
        info.metadata_path = f"{emb.subdir}/metadata.tsv"
    if emb.sprite_png is not None:
        files.write_atomic(paths.join(target, "sprite.png"), emb.sprite_png)
        info.sprite.image_path = f"{emb.subdir}/sprite.png"
        info.sprite.single_image_dim.extend(emb.sprite_dim)
    config_path = paths.join(log_dir, CONFIG_NAME)
    with _config_lock:
        files.write_atomic(config_path, merge_config(files.read_text(config_path), info))


def add_embedding(
    writer: Any,
    mat: Any,
    metadata: Any = None,
    label_img: Any = None,
    global_step: Any = None,
    tag: str = "default",
    metadata_header: Any = None,
) -> None:
    """Save vectors (with labels and thumbnails) for TensorBoard's PROJECTOR tab.

    Writes files only, no event: ``<log_dir>/<step:05d>/<tag>/tensors.tsv`` (one row per
    vector), ``metadata.tsv`` (the labels) and ``sprite.png`` (the thumbnails, ``ceil(sqrt(N))``
    a row), and adds an entry to ``<log_dir>/projector_config.pbtxt``. Unlike torch, which
    rewrites that file from what this writer logged, the entries of other writers are kept (an
    entry of the same tag and step is replaced), the file is written with protobuf's escaping
    and replaced atomically, and everything is checked before any file is created. The tag is
    escaped into one folder name (``%``, ``/``, ``\\`` as ``%25``, ``%2f``, ``%5c``), and
    thumbnails need not be square. An existing folder of the same tag and step is overwritten,
    with a warning.

    Args:
        mat: ``(N, D)`` real numbers: N vectors of D dimensions (the rows).
        metadata: N labels (each written with ``str()``), or with ``metadata_header`` N lists of
            one value per column. Default ``None`` (no labels). No tab or newline in a label.
        label_img: ``(N, C, H, W)`` thumbnails, C 1, 3 or 4, floats in [0, 1] or integers 0..255
            (NumPy or torch; ``(N, H, W)`` is grayscale). The sprite must fit in 8192x8192
            pixels. Default ``None``.
        global_step: The step, an int from 0 (part of the folder name). Default ``None``: 0.
        tag: The embedding's name in the tab, a str. Default ``"default"``.
        metadata_header: Column names for multi-column ``metadata``. Default ``None``.

    Raises:
        TypeError: ``mat`` is not real numbers (a str ``mat`` says to pass the tag by keyword,
            ``add_embedding(mat, tag=...)``); ``metadata`` is not a list; ``global_step`` is not
            an int.
        ValueError: ``mat`` is not 2-D; ``metadata`` or ``label_img`` does not have N entries; a
            metadata row has another column count than ``metadata_header``; a label holds a tab
            or newline; ``tag`` is empty; ``label_img`` has another channel count (for ``(N, H,
            W, C)`` the message gives the transpose) or makes a sprite over 8192 pixels a side;
            ``global_step`` < 0; an existing ``projector_config.pbtxt`` that does not parse (it
            is left alone).
        FileExistsError: A file (not a folder) is in the embedding folder's place.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> rng = np.random.default_rng(0)
        >>> words = ["cat", "dog", "car", "bus"]
        >>> with SummaryWriter("runs/embedding") as writer:
        ...     writer.add_embedding(
        ...         rng.normal(size=(4, 8)), metadata=words, label_img=rng.random((4, 3, 8, 8)),
        ...         tag="words",
        ...     )
    """
    if isinstance(mat, str):
        raise TypeError(
            f"mat got the str {mat!r}: add_embedding takes the matrix first and the tag as a "
            f"keyword, add_embedding(mat, tag={mat!r})"
        )
    emb = prepare(mat, metadata, label_img, global_step, tag, metadata_header)
    if not getattr(writer, "writes", True):  # a rank that only validates
        return
    log_dir = os.fspath(writer.get_logdir())
    files.makedirs(log_dir)
    write(log_dir, emb)
