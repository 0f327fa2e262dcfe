"""No image tallyboard's ``SummaryRecord`` writes is larger than MindSpore's for the same pixels.

One MindSpore child (``mindspore_support``) logs the same arrays with MindSpore 2.10's
``SummaryRecord`` (whose PNGs are Pillow's, level 6) and with tallyboard's: noise of every byte
value alike (stored), noise of a narrower range or an uneven spread (coded by frequency), tiled
batches of 32 noise images (a 256x128 canvas), smooth pictures (deflated as Pillow deflates
them). Each PNG is read back with the independent reader and Pillow: the pixels are identical and
tallyboard's PNG is no larger.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from mindspore_support import Results, run_scenarios, scenario, summary_file
from PIL import Image


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:64, 0:64] / 63.0
    return {
        "tiled 32 noise": rng.random((32, 3, 32, 32), dtype=np.float32),
        "tiled 32 noise below 0.5": rng.random((32, 3, 32, 32), dtype=np.float32) * 0.5,
        "tiled 32 normal noise": np.clip(rng.normal(0.5, 0.15, (32, 3, 32, 32)), 0, 1).astype(
            np.float32
        ),
        "tiled 32 noise of 100 levels": rng.integers(0, 100, (32, 3, 32, 32)).astype(np.float32)
        / 255,
        "one noise": rng.random((1, 3, 64, 64), dtype=np.float32),
        "one gradient": np.stack([x, y, (x + y) / 2])[None].astype(np.float32),
        "one sparse": (rng.random((1, 3, 64, 64)) > 0.9).astype(np.float32),
    }


@scenario
def both_writers(out: Path) -> None:
    import mindspore
    import tallyboard

    for name, factory, wrap in [
        ("ms", mindspore.SummaryRecord, mindspore.Tensor),
        ("tb", tallyboard.SummaryRecord, np.asarray),
    ]:
        with factory(str(out / name)) as record:
            for i, value in enumerate(_cases().values()):
                record.add_value("image", f"img{i}", wrap(value))
                record.record(i + 1)


@pytest.fixture(scope="module")
def pngs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    runs: Results = run_scenarios(__file__, tmp_path_factory.mktemp("png_sizes"))
    out: dict[str, dict[str, bytes]] = {}
    names = list(_cases())
    for side in ("ms", "tb"):
        got = out.setdefault(side, {})
        for event in msr.read_events(summary_file(runs["both_writers"].path / side)):
            if event.HasField("summary"):
                (value,) = event.summary.value
                got[names[int(value.tag[3:])]] = bytes(value.image.encoded_image)
    return out


def _pixels(png: bytes) -> Any:
    return np.asarray(Image.open(io.BytesIO(png)))


@pytest.mark.parametrize("name", list(_cases()))
def test_png_is_no_larger_than_mindsporess_for_the_same_pixels(
    pngs: dict[str, dict[str, bytes]], name: str
) -> None:
    ours, theirs = pngs["tb"][name], pngs["ms"][name]
    assert np.array_equal(_pixels(ours), _pixels(theirs))
    assert len(ours) <= len(theirs), (name, len(ours), len(theirs))


def test_the_issues_tiled_noise_batch_is_256_by_128(pngs: dict[str, dict[str, bytes]]) -> None:
    assert _pixels(pngs["tb"]["tiled 32 noise below 0.5"]).shape == (128, 256, 3)
    # coded by frequency: an eighth smaller than stored (98,505 B) and than Pillow's level 6
    assert len(pngs["tb"]["tiled 32 noise below 0.5"]) < 0.9 * 98_505


def test_noise_coded_by_frequency_is_a_valid_png_of_the_same_pixels() -> None:
    from tallyboard_image.codec import png_bytes

    rng = np.random.default_rng(1)
    for pixels in [
        rng.integers(0, 128, (128, 256, 3), dtype=np.uint8),
        rng.integers(0, 16, (300, 300, 1), dtype=np.uint8),  # several blocks
        rng.integers(0, 256, (40, 40, 4), dtype=np.uint8),  # even: stored
    ]:
        png = png_bytes(pixels)
        image = Image.open(io.BytesIO(png))
        image.load()  # Pillow checks the zlib stream and every chunk's CRC
        assert np.array_equal(np.asarray(image).reshape(pixels.shape), pixels)
        if pixels.max() < 128:
            assert len(png) < 0.9 * pixels.size
