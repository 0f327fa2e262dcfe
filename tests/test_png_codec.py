"""The PNG encoder: decoded pixels are exact whatever the path (stored, deflated, probed), and
the per-thread compressor it reuses never lets one image's stream depend on another's."""

from __future__ import annotations

import io
import threading
import zlib

import numpy as np
import pytest
from PIL import Image
from tallyboard_image import codec


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)))


def images() -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    y, x = np.mgrid[0:64, 0:64]
    smooth = np.stack([x * 4, y * 4, (x + y) * 2], axis=2).astype(np.uint8)
    speckled = np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8)
    return [
        smooth,
        speckled,
        rng.integers(0, 256, (64, 64, 3), dtype=np.uint8),  # noise
        rng.integers(0, 256, (200, 300, 4), dtype=np.uint8),  # stored in several blocks
        np.zeros((300, 300, 1), np.uint8),
        rng.integers(0, 256, (5, 7, 2), dtype=np.uint8),
        np.full((1, 1, 3), 7, np.uint8),
    ]


@pytest.mark.parametrize("level", [None, 0, 1, 6, 9])
def test_every_level_decodes_to_the_same_pixels(level: int | None) -> None:
    for pixels in images():
        decoded = decode(codec.png_bytes(pixels, level))
        np.testing.assert_array_equal(decoded.reshape(pixels.shape), pixels)


def test_noise_is_stored_and_pictures_are_deflated() -> None:
    smooth, speckled, noise = images()[:3]
    assert len(codec.png_bytes(noise)) > noise.nbytes  # stored: nothing to gain
    assert len(codec.png_bytes(smooth)) < smooth.nbytes * 0.1
    assert len(codec.png_bytes(speckled)) < speckled.nbytes * 0.9


def test_a_stored_stream_is_a_valid_zlib_stream_of_any_length() -> None:
    rng = np.random.default_rng(6)
    for n in [0, 1, 65535, 65536, 200_001]:
        raw = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert zlib.decompress(codec._stored(raw)) == raw


def test_each_image_from_the_reused_compressor_stands_alone() -> None:
    pictures = images()
    encoded = [codec.png_bytes(p, 1) for p in pictures * 2]
    for pixels, data in zip(pictures * 2, encoded):
        np.testing.assert_array_equal(decode(data).reshape(pixels.shape), pixels)
    assert encoded[: len(pictures)] == encoded[len(pictures) :]  # no state carried over


def test_threads_encoding_at_once_each_get_exact_pixels() -> None:
    pictures = images()
    failures: list[str] = []

    def work() -> None:
        for _ in range(20):
            for pixels in pictures:
                if not np.array_equal(
                    decode(codec.png_bytes(pixels, 1)).reshape(pixels.shape), pixels
                ):
                    failures.append(str(pixels.shape))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
