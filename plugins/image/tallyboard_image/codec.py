"""Encoding image payloads: PNG stills (NumPy + zlib; Pillow only to draw boxes or resize) and
animated GIF videos (Pillow).

Sink encoders call :func:`encode`; it may run on a sink's background thread (NumPy and zlib
release the GIL while they work). Decoded pixels match torch's exactly; the PNG bytes differ
(TensorBoard needs a valid PNG, not torch's bytes). Pictures are compressed as Pillow (so torch
and MindSpore) compresses them, PNG's filter chosen row by row and zlib at level 6, so a PNG is
no larger than theirs; the filters are computed a block of rows at a time with NumPy instead of
byte by byte. Data that does not compress (noise) is not deflated at great cost for nothing:
it is stored, or, when its bytes are spread unevenly (noise of a narrower range, 7 bits a byte
for values in [0, 0.5)), coded byte by byte by frequency (deflate without matches, zlib's
Huffman-only strategy), which is smaller than Pillow's level-6 deflate of the same noise. The checksums (Adler-32, CRC-32) come from zlib-ng, whose SIMD versions take a sixth
of the time of those of the zlib Python links: in a stored PNG they were most of the work.
"""

from __future__ import annotations

import io
import math
import struct
import threading
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from zlib_ng import zlib_ng
from zlib_ng.zlib_ng import adler32, crc32

from .convert import ImagePayload

#: zlib level for PNG data: Pillow's default, with which torch and MindSpore write their PNGs.
PNG_COMPRESS_LEVEL = 6
#: zlib level of the probe that decides whether data compresses at all (a decision, not output).
PROBE_LEVEL = 1
#: The longest a GIF frame can last: its delay is uint16 centiseconds.
MAX_GIF_FRAME_MS = 655350
#: Deflate is skipped (data stored) when a probe of the data shrinks by less than this fraction.
MIN_SAVING = 0.05
_PROBE_BYTES = 16384
#: Images with fewer bytes near their prediction than this fraction (see :func:`_near_zero`) are
#: stored without a probe, those with at least ``PICTURE_NEAR_ZERO`` are deflated without one
#: (noise has 1/8, pictures and ramps mostly over 1/2); in between, a deflate probe decides.
NOISE_NEAR_ZERO = 0.2
PICTURE_NEAR_ZERO = 0.5
#: Data that would be stored is coded by frequency instead (:func:`_huffman_saves`) when its
#: bytes' entropy, estimated on a sample, is at most this many bits a byte (8 when even).
HUFFMAN_MAX_BITS = 7.9
#: The level passed with Huffman-only coding (the level marks such images in ``png_parts``).
HUFFMAN = -1
_HUFFMAN_SAMPLE = 1024
_C_LOG2_C = np.arange(2 * _HUFFMAN_SAMPLE + 1, dtype=np.float64)
_C_LOG2_C[1:] *= np.log2(_C_LOG2_C[1:])
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+alpha, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc32(data, crc32(kind)))


_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, no dictionary
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
        return [_ZLIB_HEADER, _pack_stored(1, n, n ^ 0xFFFF), raw, _pack_u32(adler32(raw))]
    view = memoryview(raw)
    parts: list[_Buffer] = [_ZLIB_HEADER]
    for start in range(0, n, _STORED_MAX):
        piece = view[start : start + _STORED_MAX]
        last = start + _STORED_MAX >= n
        parts += [_pack_stored(last, len(piece), len(piece) ^ 0xFFFF), piece]
    parts.append(_pack_u32(adler32(view)))
    return parts


def _probe_size(data: _Buffer) -> int:
    """Bytes ``data`` deflates to at :data:`PROBE_LEVEL`, from a compressor kept per thread: each
    call ends with a full flush, so no call's output depends on another's. zlib's compressor
    costs a quarter of a megabyte to set up, more than compressing a small probe; this sets it
    up once."""
    compressor = getattr(_compressors, "probe", None) or zlib.compressobj(
        PROBE_LEVEL, zlib.DEFLATED, -15
    )
    _compressors.probe = None  # a failed call leaves no half-used stream behind
    size = len(compressor.compress(data)) + len(compressor.flush(zlib.Z_FULL_FLUSH))
    _compressors.probe = compressor
    return size


def _compresses(view: memoryview) -> bool:
    """Whether deflate shrinks ``view`` by :data:`MIN_SAVING` at least, judged on four pieces."""
    if len(view) < 4096:
        return True
    piece = min(_PROBE_BYTES, len(view) // 4) // 4
    step = len(view) // 4
    sample = b"".join(view[i * step : i * step + piece] for i in range(4))
    return _probe_size(sample) <= len(sample) * (1 - MIN_SAVING)


def _huffman_saves(samples: np.ndarray) -> list[bool]:
    """For each of ``k`` images, whether coding its bytes by their frequency shrinks it, judged
    on a sample of them (``samples``: ``(k, ...)`` bytes, a few thousand an image): their
    entropy (with Miller and Madow's correction for a sample's bias) is at most
    :data:`HUFFMAN_MAX_BITS` bits a byte. Noise of every byte value alike has 8 and is stored;
    noise of half the values 7, which deflate shrinks by an eighth. One count for all ``k``
    (about 10 µs a call, whatever ``k``)."""
    k = len(samples)
    flat = samples.reshape(k, -1)
    n = flat.shape[1]
    if n >= len(_C_LOG2_C):
        flat = flat[:, :: n // (len(_C_LOG2_C) - 1) + 1]
        n = flat.shape[1]
    if not n:
        return [False] * k
    if k == 1:  # the common case, a few calls fewer
        counts = np.bincount(flat.reshape(-1), minlength=256)
        seen = int(np.count_nonzero(counts))
        bits = math.log2(n) - float(_C_LOG2_C.take(counts).sum()) / n
        return [bits + (seen - 1) / (2 * n * math.log(2)) <= HUFFMAN_MAX_BITS]
    # image i's byte b counts at i * 256 + b (uint16 keys count fastest)
    offsets = np.arange(k, dtype=np.uint16 if k <= 256 else np.intp) * 256
    keys = flat | offsets[:, None]
    many = np.bincount(keys.reshape(-1), minlength=256 * k).reshape(k, 256)
    # H = log2(n) - sum(c log2 c) / n, the sum looked up in a table of c log2 c
    entropy = math.log2(n) - _C_LOG2_C.take(many).sum(axis=1) / n
    entropy += (np.count_nonzero(many, axis=1) - 1) / (2 * n * math.log(2))
    return (entropy <= HUFFMAN_MAX_BITS).tolist()  # type: ignore[no-any-return]


def _huffman_parts(view: memoryview) -> list[_Buffer]:
    """A zlib stream of ``view`` coded byte by byte by frequency (deflate's Huffman-only
    strategy: no search for matches, so no cost for noise), or stored if that is no smaller."""
    compressor = zlib_ng.compressobj(1, zlib_ng.DEFLATED, 15, 8, zlib_ng.Z_HUFFMAN_ONLY)
    parts: list[_Buffer] = [compressor.compress(view), compressor.flush()]
    if sum(map(len, parts)) >= len(view) + 5 * (len(view) // _STORED_MAX + 1) + 6:
        return _stored_parts(view)
    return parts


def _deflate_parts(raw: _Buffer, level: int, probe: bool = True) -> list[_Buffer]:
    """The pieces of a zlib stream of ``raw``: stored at ``level`` 0; coded by frequency alone at
    :data:`HUFFMAN`, or when a ``probe`` shows it does not deflate but its bytes are uneven
    (:func:`_huffman_saves`); stored when neither helps; else deflated at ``level`` as Pillow
    deflates PNG data (the filtered strategy, one stream from a fresh compressor: no flush
    marker in it)."""
    view = memoryview(raw)
    if level == HUFFMAN:
        return _huffman_parts(view)
    if level <= 0:
        return _stored_parts(view)
    if probe and not _compresses(view):
        flat = np.frombuffer(view, np.uint8)
        sample = flat[:: max(1, len(flat) // _HUFFMAN_SAMPLE)]
        return _huffman_parts(view) if _huffman_saves(sample[None])[0] else _stored_parts(view)
    compressor = zlib.compressobj(level, zlib.DEFLATED, 15, 8, zlib.Z_FILTERED)
    return [compressor.compress(view), compressor.flush()]


def _near_zero(rows: np.ndarray, channels: int = 1) -> list[float]:
    """How predictable pictures are, judged on about 8 rows of each (``rows``: images of rows
    of bytes, ``(k, h, bytes)``; ``channels``: bytes a pixel): per image, the fraction of bytes
    within 16 (modulo 256) of what the pixels left, above and above-left predict (``left + above
    - above_left``, the plane through them). In pictures most bytes are, in noise (which deflate
    cannot shrink) one in eight; the plane also predicts a ramp exactly (a row such as
    ``np.arange(n) % 251`` steps by the same amount from its neighbours, which deflate shrinks to
    3% once filtered). A single row is judged on its left neighbours alone."""
    h = rows.shape[1]
    if h > 1:
        k = max(1, (h - 1) // 8)
        rows = rows[:, 1::k] - rows[:, : h - 1 : k]
    residual = rows[:, :, channels:] - rows[:, :, :-channels]
    residual += np.uint8(16)
    near = residual < 32
    n = near[0].size
    if not n:
        return [1.0] * len(near)
    if len(near) == 1:
        return [np.count_nonzero(near) / n]
    return (near.reshape(len(near), -1).sum(axis=1) / n).tolist()


#: Bytes of pixels filtered at a time: the filters' temporaries stay in cache and a large image
#: needs a few of them, not a few copies of itself.
FILTER_BLOCK_BYTES = 1 << 14
#: PNG's filter types in the order they are tried; on a tie the earlier one wins (None first,
#: then Up, which is exact for a row equal to the one above), as libpng and Pillow try them.
_FILTER_ORDER = np.array([0, 2, 1, 3, 4], dtype=np.uint8)


def _costs(candidates: np.ndarray) -> np.ndarray:
    """Per candidate and row, the sum of the filtered bytes' distances from zero taken as signed
    bytes (the heuristic libpng and Pillow choose a row's filter by: small residuals deflate
    best). Summed in 16 bits a stretch of up to 512 bytes at a time (128 x 512 fits), which
    NumPy does several times faster than summing bytes into 32 bits."""
    distance = np.minimum(candidates, np.negative(candidates))
    k, h, n = distance.shape
    whole = n - n % 512
    if not whole:
        return distance.sum(axis=-1, dtype=np.uint16)
    stretches = distance[:, :, :whole].reshape(k, h, whole // 512, 512)
    costs = stretches.sum(axis=-1, dtype=np.uint16).sum(axis=-1, dtype=np.uint32)
    if whole < n:
        costs += distance[:, :, whole:].sum(axis=-1, dtype=np.uint16)
    return costs


def _filter_block(x: np.ndarray, above: np.ndarray, bpp: int, out: np.ndarray) -> None:
    """Filter the rows ``x`` (``above``: the row before the first, zeros for an image's first)
    into ``out`` (a row longer: its first byte the filter type), each row with whichever of
    PNG's five filters leaves the smallest residuals (:func:`_costs`)."""
    h, n = x.shape
    # a: the byte a pixel to the left, b: the byte above, c: the byte above a (0 off the image)
    b = np.empty((h, n), dtype=np.int16)
    b[0] = above
    b[1:] = x[:-1]
    a = np.zeros((h, n), dtype=np.int16)
    a[:, bpp:] = x[:, :-bpp]
    c = np.zeros((h, n), dtype=np.int16)
    c[:, bpp:] = b[:, :-bpp]
    candidates = np.empty((5, h, n), dtype=np.uint8)
    candidates[0] = x
    np.subtract(x, b, out=candidates[1], casting="unsafe")  # Up; uint8 keeps the low byte
    np.subtract(x, a, out=candidates[2], casting="unsafe")  # Sub
    mean = a + b
    mean >>= 1
    np.subtract(x, mean, out=candidates[3], casting="unsafe")  # Average
    # Paeth: of a, b, c the one nearest to a + b - c (a on a tie, then b)
    b_minus_c = b - c
    a_minus_c = a - c
    pa = np.abs(b_minus_c)
    pb = np.abs(a_minus_c)
    pc = np.abs(b_minus_c + a_minus_c)
    predictor = c + b_minus_c * (pb <= pc)
    take_a = pa <= pb
    take_a &= pa <= pc
    predictor += (a - predictor) * take_a
    np.subtract(x, predictor, out=candidates[4], casting="unsafe")
    best = _costs(candidates).argmin(axis=0)
    out[:, 0] = _FILTER_ORDER[best]
    out[:, 1:] = candidates[best, np.arange(h)]


def filtered_rows(rows: np.ndarray, bpp: int) -> np.ndarray:
    """PNG's filtered scanlines of ``rows`` (a row of bytes each, ``bpp`` bytes a pixel): one
    more byte a row, the filter type, chosen row by row as libpng and Pillow choose it."""
    h, n = rows.shape
    out = np.empty((h, n + 1), dtype=np.uint8)
    step = max(1, FILTER_BLOCK_BYTES // max(1, n))
    above = np.zeros(n, dtype=np.uint8)
    for start in range(0, h, step):
        stop = min(h, start + step)
        _filter_block(rows[start:stop], above, bpp, out[start:stop])
        above = rows[stop - 1]
    return out


_ihdr_cache: dict[tuple[int, int, int], bytes] = {}


def _ihdr(w: int, h: int, c: int) -> bytes:
    """The IHDR chunk of a ``w`` x ``h`` image of ``c`` 8-bit channels, kept for the next image
    of that shape (a run logs a few shapes many times)."""
    chunk = _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPES[c], 0, 0, 0))
    if len(_ihdr_cache) < 256:
        _ihdr_cache[w, h, c] = chunk
    return chunk


_stored_heads: dict[tuple[int, int, int], tuple[bytes, int] | None] = {}


def _stored_head(w: int, h: int, c: int) -> tuple[bytes, int] | None:
    """For a stored PNG of a ``w`` x ``h`` image of ``c`` channels whose filtered rows fit one
    stored block: its bytes up to the rows (signature, IHDR, the IDAT chunk's start, zlib's and
    the block's headers) and the CRC of the chunk so far; None when the rows take more blocks."""
    n = h * (w * c + 1)
    found = None
    if n <= _STORED_MAX:
        stream = _ZLIB_HEADER + _pack_stored(1, n, n ^ 0xFFFF)
        size = len(stream) + n + 4  # and the Adler-32
        head = _PNG_SIGNATURE + _ihdr(w, h, c) + _pack_u32(size) + b"IDAT" + stream
        found = (head, crc32(b"IDAT" + stream))
    if len(_stored_heads) < 256:
        _stored_heads[w, h, c] = found
    return found


def scanlines(h: int, w: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    """A buffer for :func:`png_from_scanlines` and the HWC view of its pixels, for a caller
    that lays out pixels itself (a canvas of tiles): they go straight where the PNG needs them."""
    buffer = np.empty((h, w * c + 1), dtype=np.uint8)
    return buffer, buffer[:, 1:].reshape(h, w, c)


def png_bytes(pixels: np.ndarray, level: int | None = None) -> bytes:
    """A PNG of HWC ``uint8`` pixels (C 1..4), 8 bits per sample."""
    h, w, c = pixels.shape
    buffer, view = scanlines(h, w, c)
    view[...] = pixels
    return png_from_scanlines(buffer, w, c, level)


def png_from_scanlines(buffer: np.ndarray, w: int, c: int, level: int | None = None) -> bytes:
    """A PNG of the pixels in ``buffer`` (from :func:`scanlines`; its first column is written
    here). ``level``: zlib's, 0 to store; None (the default) stores what cannot be compressed
    (noise) and deflates the rest at :data:`PNG_COMPRESS_LEVEL`, after PNG's adaptive filters."""
    return b"".join(png_parts(buffer[None], w, c, level)[0])


def png_parts(buffers: np.ndarray, w: int, c: int, level: int | None = None) -> list[list[_Buffer]]:
    """PNGs of a stack of images of one shape, ``(k, h, 1 + w * c)`` laid out as
    :func:`scanlines` lays out one (see :func:`png_from_scanlines`), each as the pieces that make
    it (stored rows are views of ``buffers``, valid until ``buffers`` changes), for a caller that
    copies them into a larger message at once. What can be decided for all at once is (whether
    each compresses), the rest image by image."""
    k, h = buffers.shape[:2]
    rows = buffers[:, :, 1:]
    levels = [PNG_COMPRESS_LEVEL if level is None else level] * k
    probes = [True] * k
    if level is None and rows[0].size >= 4096:
        # decide on a cheap statistic; only the unclear cases probe
        noise = []
        for i, near_zero in enumerate(_near_zero(rows, c)):
            if near_zero < NOISE_NEAR_ZERO:
                noise.append(i)
            elif near_zero >= PICTURE_NEAR_ZERO:
                probes[i] = False
        if noise:  # stored, or coded by frequency when that saves
            every = max(1, h // (_HUFFMAN_SAMPLE // rows.shape[2] + 1))
            sample = rows[:, ::every] if len(noise) == k else rows[noise, ::every]
            for i, saves in zip(noise, _huffman_saves(sample)):
                levels[i] = HUFFMAN if saves else 0
    if min(levels) <= 0:  # stored or coded by frequency: rows unfiltered
        buffers[[i for i, lv in enumerate(levels) if lv <= 0], :, 0] = 0  # filter type None
    ihdr = _ihdr_cache.get((w, h, c)) or _ihdr(w, h, c)
    idat = crc32(b"IDAT")
    out: list[list[_Buffer]] = []
    stored = _stored_heads.get((w, h, c)) or _stored_head(w, h, c)
    for i, image_level in enumerate(levels):
        if image_level == 0 and stored is not None:  # one stored block: all but the data known
            head, head_crc = stored
            data = buffers[i].data.cast("B")
            adler = _pack_u32(adler32(data))
            crc = crc32(adler, crc32(data, head_crc))
            out.append([head, data, adler + _pack_u32(crc) + _IEND])
            continue
        data = buffers[i] if image_level <= 0 else filtered_rows(rows[i], c)
        # The zlib stream goes into the PNG as pieces (views of ``data`` when stored): one copy,
        # the final join; the IDAT CRC is computed over the pieces.
        parts = _deflate_parts(data.data.cast("B"), image_level, probes[i])
        crc = idat
        for part in parts:
            crc = crc32(part, crc)
        size = sum(map(len, parts))
        out.append([_PNG_SIGNATURE, ihdr, _pack_u32(size), b"IDAT", *parts, _pack_u32(crc), _IEND])
    return out


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
