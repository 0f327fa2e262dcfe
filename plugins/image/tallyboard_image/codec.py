"""Encoding image payloads: PNG stills (NumPy + zlib; Pillow only to draw boxes or resize) and
animated GIF videos (Pillow).

Sink encoders call :func:`encode`; it may run on a sink's background thread (NumPy and zlib
release the GIL while they work). Decoded pixels match torch's exactly; the PNG bytes differ
(TensorBoard needs a valid PNG, not torch's bytes): every row uses PNG's "Up" filter, one
vectorized subtraction instead of Pillow's per-row adaptive choice, and data that does not
compress (noise) is stored rather than deflated at great cost for nothing.
"""

from __future__ import annotations

import io
import struct
import threading
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .convert import ImagePayload

#: zlib level for PNG data: 1 is much faster than Pillow's default 6 for a few percent more bytes.
PNG_COMPRESS_LEVEL = 1
#: The longest a GIF frame can last: its delay is uint16 centiseconds.
MAX_GIF_FRAME_MS = 655350
#: Deflate is skipped (data stored) when a probe of the data shrinks by less than this fraction.
MIN_SAVING = 0.05
_PROBE_BYTES = 16384
#: Filtered rows with fewer bytes near zero than this fraction (also after "Sub", see
#: :func:`_near_zero`) are stored without a probe, rows with at least ``PICTURE_NEAR_ZERO`` are
#: deflated without one (noise has 1/8, pictures and ramps mostly over 1/2); in between, a deflate
#: probe decides.
NOISE_NEAR_ZERO = 0.2
PICTURE_NEAR_ZERO = 0.5
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))
    )


_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, no dictionary
_FINAL_BLOCK = b"\x03\x00"  # an empty last block (fixed Huffman codes)
_STORED_MAX = 0xFFFF
_pack_u32 = struct.Struct(">I").pack
_pack_stored = struct.Struct("<BHH").pack
_IEND = _chunk(b"IEND", b"")
_compressors = threading.local()

_Buffer = bytes | memoryview


def _stored_parts(raw: _Buffer) -> list[_Buffer]:
    """The pieces of a zlib stream of ``raw`` in stored (uncompressed) blocks, built without
    zlib's compressor: views of ``raw`` between block headers, so nothing is copied here."""
    n = len(raw)
    if n <= _STORED_MAX:
        return [_ZLIB_HEADER, _pack_stored(1, n, n ^ 0xFFFF), raw, _pack_u32(zlib.adler32(raw))]
    view = memoryview(raw)
    parts: list[_Buffer] = [_ZLIB_HEADER]
    for start in range(0, n, _STORED_MAX):
        piece = view[start : start + _STORED_MAX]
        last = start + _STORED_MAX >= n
        parts += [_pack_stored(last, len(piece), len(piece) ^ 0xFFFF), piece]
    parts.append(_pack_u32(zlib.adler32(view)))
    return parts


def _stored(raw: _Buffer) -> bytes:
    """A zlib stream of ``raw`` in stored (uncompressed) blocks: a copy and an Adler-32."""
    return b"".join(_stored_parts(raw))


def _blocks(data: _Buffer, level: int) -> list[bytes]:
    """Deflate blocks of ``data`` that need nothing before them, from a compressor kept per thread
    and level: each call ends with a full flush, which makes the next call's blocks stand alone.
    zlib's compressor costs a quarter of a megabyte to set up, more than compressing a small
    image; this sets it up once."""
    cache = getattr(_compressors, "by_level", None)
    if cache is None:
        cache = _compressors.by_level = {}
    compressor = cache.pop(level, None) or zlib.compressobj(level, zlib.DEFLATED, -15)
    out = [compressor.compress(data), compressor.flush(zlib.Z_FULL_FLUSH)]
    cache[level] = compressor  # only after success: a failed call leaves no half-used stream
    return out


def _deflate_parts(raw: _Buffer, level: int, probe: bool = True) -> list[_Buffer]:
    """The pieces of a zlib stream of ``raw``: deflated at ``level`` unless a probe shows it does
    not compress (then stored)."""
    if level <= 0:
        return _stored_parts(raw)
    view = memoryview(raw)
    if probe and len(view) >= 4096:
        piece = min(_PROBE_BYTES, len(view) // 4) // 4
        step = len(view) // 4
        sample = b"".join(view[i * step : i * step + piece] for i in range(4))
        if sum(map(len, _blocks(sample, level))) > len(sample) * (1 - MIN_SAVING):
            return _stored_parts(view)
    return [_ZLIB_HEADER, *_blocks(view, level), _FINAL_BLOCK, _pack_u32(zlib.adler32(view))]


def _deflate(raw: _Buffer, level: int, probe: bool = True) -> bytes:
    """zlib stream of ``raw``: deflated at ``level`` unless a probe shows it does not compress
    (then stored)."""
    return b"".join(_deflate_parts(raw, level, probe))


def _near_zero(filtered: np.ndarray, channels: int = 1) -> float:
    """How predictable "Up"-filtered rows are, over 16 rows or so: the fraction of bytes within
    16 of zero (modulo 256), in pictures most, in noise (which deflate cannot shrink) one in
    eight. Rows that are mostly far from zero are also tried with each byte minus the one a
    pixel to the left (PNG's "Sub" on top of "Up"): a ramp such as ``np.arange(n) % 251`` moves
    by the same nonzero step from row to row, which deflate shrinks to 3% and which the first
    fraction alone took for noise (stored, 35 times the bytes). ``channels``: bytes a pixel."""
    sample = (filtered[:: max(1, len(filtered) // 16)] + np.uint8(16)).reshape(-1)
    near = int(np.count_nonzero(sample < 32)) / sample.size
    if near >= NOISE_NEAR_ZERO or sample.size <= channels:
        return near
    # (a + 16) - (b + 16) = a - b: the shifted sample serves both (rows' ends mix, a few bytes)
    second = np.subtract(sample[channels:], sample[:-channels])
    second += np.uint8(16)
    return max(near, int(np.count_nonzero(second < 32)) / second.size)


_ihdr_cache: dict[tuple[int, int, int], bytes] = {}


def _ihdr(w: int, h: int, c: int) -> bytes:
    """The IHDR chunk of a ``w`` x ``h`` image of ``c`` 8-bit channels, kept for the next image
    of that shape (a run logs a few shapes many times)."""
    chunk = _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPES[c], 0, 0, 0))
    if len(_ihdr_cache) < 256:
        _ihdr_cache[w, h, c] = chunk
    return chunk


def png_bytes(pixels: np.ndarray, level: int | None = None) -> bytes:
    """A PNG of HWC ``uint8`` pixels (C 1..4), 8 bits per sample, every row "Up"-filtered."""
    h, w, c = pixels.shape
    rows = pixels.reshape(h, w * c)
    filtered = np.empty((h, w * c + 1), dtype=np.uint8)
    filtered[:, 0] = 2  # filter type Up: byte minus the byte above (zero above the first row)
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])
    ihdr = _ihdr_cache.get((w, h, c)) or _ihdr(w, h, c)
    probe = True
    if level is None:
        level = PNG_COMPRESS_LEVEL
        if filtered.size >= 4096:  # decide on a cheap statistic; only the unclear cases probe
            near_zero = _near_zero(filtered, c)
            if near_zero < NOISE_NEAR_ZERO:
                level = 0
            elif near_zero >= PICTURE_NEAR_ZERO:
                probe = False
    # The zlib stream goes into the file as pieces (views of ``filtered`` when stored): one copy,
    # the final join, instead of one per step; the IDAT CRC is computed over the pieces.
    parts = _deflate_parts(filtered.data.cast("B"), level, probe)
    crc = zlib.crc32(b"IDAT")
    for part in parts:
        crc = zlib.crc32(part, crc)
    return b"".join(
        [
            _PNG_SIGNATURE,
            ihdr,
            _pack_u32(sum(map(len, parts))),
            b"IDAT",
            *parts,
            _pack_u32(crc),
            _IEND,
        ]
    )


@dataclass(frozen=True)
class EncodedImage:
    """An encoded image and the header fields TensorBoard and MindSpore store beside it.

    ``height`` and ``width`` are those of the payload before ``rescale``, as torch reports them.
    """

    height: int
    width: int
    colorspace: int
    data: bytes
    content_type: str


def _draw_boxes(image: Any, boxes: np.ndarray, labels: tuple[str, ...] | None) -> Any:
    """torch's ``draw_boxes``: red outline of width 2; each label on a red box at the bottom-left."""
    from PIL import ImageDraw, ImageFont

    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default() if labels else None
    for i, (left, top, right, bottom) in enumerate(boxes.tolist()):
        draw.line(
            [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)],
            width=2,
            fill="Red",
        )
        text = labels[i] if labels else None
        if text and font is not None:
            x0, y0, x1, y1 = font.getbbox(text)
            text_width, text_height = x1 - x0, y1 - y0
            margin = float(np.ceil(0.05 * text_height))
            draw.rectangle(
                [(left, bottom - text_height - 2 * margin), (left + text_width, bottom)], fill="Red"
            )
            draw.text((left + margin, bottom - text_height - margin), text, fill="black", font=font)
    return image


def _drawn(payload: ImagePayload) -> np.ndarray:
    """torch's ``make_image`` with Pillow: boxes drawn, then a LANCZOS resize by ``rescale``."""
    from PIL import Image

    image = Image.fromarray(payload.pixels)
    if payload.boxes is not None and len(payload.boxes):
        image = _draw_boxes(image, payload.boxes, payload.labels)
    size = (int(payload.width * payload.rescale), int(payload.height * payload.rescale))
    if size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    return np.asarray(image).reshape(size[1], size[0], payload.channels)


def encode_png(payload: ImagePayload) -> EncodedImage:
    """A still payload as PNG (boxes drawn first, then a LANCZOS resize when ``rescale != 1``)."""
    plain = (payload.boxes is None or not len(payload.boxes)) and payload.rescale == 1.0
    pixels = payload.pixels if plain else _drawn(payload)
    return EncodedImage(
        payload.height, payload.width, payload.channels, png_bytes(pixels), "image/png"
    )


def encode_gif(payload: ImagePayload) -> EncodedImage:
    """A video payload as an animated GIF looping forever at ``payload.fps``."""
    from PIL import Image

    assert payload.fps is not None
    gray = payload.channels == 1
    # Pillow shows a run of identical frames as one frame lasting their summed durations, and a
    # GIF frame lasts at most 655.35 s: merge such runs here, each capped at that.
    step = 1000.0 / payload.fps
    arrays: list[np.ndarray] = []
    durations: list[float] = []
    for f in payload.pixels:
        if arrays and np.array_equal(f, arrays[-1]):
            durations[-1] += step
        else:
            arrays.append(f)
            durations.append(step)
    frames = [Image.fromarray(f[:, :, 0] if gray else f) for f in arrays]

    def save(per_frame: list[float]) -> bytes:
        out = io.BytesIO()
        frames[0].save(
            out,
            format="GIF",
            save_all=True,
            append_images=frames[1:],
            duration=per_frame if len(frames) > 1 else per_frame[0],
            loop=0,
        )
        return out.getvalue()

    try:
        data = save([min(d, MAX_GIF_FRAME_MS) for d in durations])
    except (OverflowError, struct.error):
        # Different frames that the palette makes identical were merged past the limit: cap
        # each so that no merge can pass it (the timing of such a slow video is approximate).
        data = save([min(d, MAX_GIF_FRAME_MS // len(frames)) for d in durations])
    return EncodedImage(payload.height, payload.width, payload.channels, data, "image/gif")


def encode(payload: ImagePayload) -> EncodedImage:
    """PNG for a still image, GIF for a video."""
    return encode_gif(payload) if payload.is_video else encode_png(payload)
