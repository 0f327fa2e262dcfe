"""The image and audio plugins as plugins: cheap to import, registered through entry points."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from conftest import load_run, raw_events
from tallyboard import SummaryWriter, get_registry


def test_import_and_registry_stay_light():
    code = (
        "import sys, tallyboard_image, tallyboard_audio\n"
        "heavy = ('PIL', 'matplotlib', 'numpy', 'soundfile')\n"
        "print(*[m for m in heavy if m in sys.modules])\n"
        "from tallyboard import get_registry\n"
        "get_registry()\n"
        "print(*[m for m in heavy[:2] if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == ["", ""]


def test_kinds_methods_and_heavy_flag():
    reg = get_registry()
    image, audio = reg.kind("image"), reg.kind("audio")
    assert image.heavy and not audio.heavy
    assert set(image.methods) == {
        "add_image",
        "add_images",
        "add_image_with_boxes",
        "add_figure",
        "add_video",
    }
    assert set(audio.methods) == {"add_audio"}
    assert ("image", "tfevents") in reg.encoders and ("audio", "tfevents") in reg.encoders


def test_payload_passes_through_add_value(logdir):
    from tallyboard_audio.convert import AudioPayload
    from tallyboard_image.convert import ImagePayload

    pixels = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    with SummaryWriter(logdir) as w:
        w.add_value("image", "i", ImagePayload(pixels))
        w.add_value("audio", "a", AudioPayload(np.array([[1, -1]], dtype="<i2"), 8000.0))
    acc = load_run(logdir)
    assert (acc.Images("i")[0].width, acc.Images("i")[0].height) == (3, 2)
    assert acc.Audio("a")[0].sample_rate == 8000 and acc.Audio("a")[0].length_frames == 1
    (audio,) = [
        e.summary.value[0].audio
        for e in raw_events(logdir)
        if e.summary.value[:1] and e.summary.value[0].tag == "a"
    ]
    assert audio.num_channels == 2 and audio.encoded_audio_string[44:] == b"\x01\x00\xff\xff"


def test_tfevents_encoders_accept_plain_arrays():
    from tallyboard_audio.tfevents import encode as encode_audio
    from tallyboard_image.tfevents import encode as encode_image
    from tensorboard.compat.proto import event_pb2

    image = event_pb2.Event.FromString(
        encode_image("i", 2, 1.0, np.zeros((4, 3, 5, 6)))
    ).summary.value[0]
    assert (image.image.height, image.image.width, image.image.colorspace) == (5, 24, 3)
    audio = event_pb2.Event.FromString(encode_audio("a", 2, 1.0, np.zeros(7))).summary.value[0]
    assert (audio.audio.sample_rate, audio.audio.length_frames) == (44100, 7)
