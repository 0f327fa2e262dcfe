"""A real TensorBoard serves our images, GIF videos and audio through its JSON routes."""

from __future__ import annotations

import io
import urllib.request

import numpy as np
from PIL import Image
from tallyboard import SummaryWriter
from tb_server import tensorboard_server


def test_tensorboard_serves_images_video_and_audio(tmp_path):
    img = np.random.default_rng(0).random((3, 6, 5), dtype=np.float32)
    vid = np.random.default_rng(1).random((2, 3, 3, 4, 4), dtype=np.float32)
    wav_samples = np.linspace(-1, 1, 16)
    with SummaryWriter(tmp_path / "run") as w:
        w.add_image("pic", img, 1)
        w.add_image("pic", img * 0.5, 2)
        w.add_video("clip", vid, 1, fps=5)
        w.add_audio("sound", wav_samples, 1, sample_rate=8000)
    with tensorboard_server(tmp_path) as tb:
        assert tb.get_json("/data/runs") == ["run"]
        tags = tb.get_json("/data/plugin/images/tags")
        assert set(tags["run"]) == {"pic", "clip"}
        entries = tb.get_json("/data/plugin/images/images", run="run", tag="pic", sample=0)
        assert [e["step"] for e in entries] == [1, 2]
        png = tb.get("/data/plugin/images/individualImage?" + entries[0]["query"])
        with Image.open(io.BytesIO(png)) as im:
            assert im.format == "PNG" and im.size == (5, 6)
            assert (np.asarray(im) == (img.transpose(1, 2, 0) * 255).astype(np.uint8)).all()
        (clip,) = tb.get_json("/data/plugin/images/images", run="run", tag="clip", sample=0)
        url = f"{tb.base}/data/plugin/images/individualImage?{clip['query']}"
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.headers["Content-Type"] == "image/gif"
            with Image.open(io.BytesIO(resp.read())) as im:
                assert im.format == "GIF" and im.n_frames == 3 and im.size == (8, 4)
        assert tb.get_json("/data/plugin/audio/tags")["run"]["sound"]["samples"] == 1
        (sound,) = tb.get_json("/data/plugin/audio/audio", run="run", tag="sound", sample=0)
        assert sound["contentType"] == "audio/wav"
        wav = tb.get("/data/plugin/audio/individualAudio?" + sound["query"])
        assert len(wav) == 44 + 16 * 2 and wav[:4] == b"RIFF"
