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
        assert zlib.decompress(b"".join(codec._stored_parts(raw))) == raw


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


def smooth_pictures() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:64, 0:64] / 63.0
    gradient = np.stack([x, y, (x + y) / 2], axis=2)
    walk = rng.normal(size=(128, 128, 3)).cumsum(0).cumsum(1)
    pictures = {
        "gradient": gradient,
        "radial": np.stack([np.hypot(x - 0.5, y - 0.5)] * 3, axis=2),
        "waves": np.stack([np.sin(6 * x) / 2 + 0.5, np.cos(5 * y) / 2 + 0.5, x * y], axis=2),
        "eight gradients": np.concatenate([gradient] * 8, axis=1),
        "random walk": (walk - walk.min()) / (walk.max() - walk.min()),
    }
    out = {name: (p * 255).astype(np.uint8) for name, p in pictures.items()}
    out["speckled"] = np.clip(out["gradient"] + rng.normal(0, 6, (64, 64, 3)), 0, 255).astype(
        np.uint8
    )
    out["gray"] = out["radial"][:, :, :1]
    return out


@pytest.mark.parametrize("name", list(smooth_pictures()))
def test_pictures_are_no_larger_than_pillows_pngs(name: str) -> None:
    """Pillow's PNGs are torch's and MindSpore's: the same pixels in no more bytes."""
    pixels = smooth_pictures()[name]
    out = io.BytesIO()
    Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels).save(out, format="PNG")
    ours = codec.png_bytes(pixels)
    np.testing.assert_array_equal(decode(ours).reshape(pixels.shape), pixels)
    assert len(ours) <= len(out.getvalue())
