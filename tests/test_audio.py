"""Audio: 16-bit PCM WAV read back with TensorBoard's loader and decoded with wave and soundfile."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
import soundfile
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter


def decode(wav_bytes: bytes) -> tuple[np.ndarray, int, int]:
    """(int16 samples as (frames, channels), channels, frame rate) via the stdlib reader."""
    with wave.open(io.BytesIO(wav_bytes)) as r:
        assert r.getsampwidth() == 2
        channels, rate = r.getnchannels(), r.getframerate()
        data = np.frombuffer(r.readframes(r.getnframes()), dtype="<i2")
    return data.reshape(-1, channels), channels, rate


def test_worked_sizes_and_scaling(logdir):
    with SummaryWriter(logdir) as w:
        w.add_audio("four", np.array([0.5, -0.5, 1.0, 0.0], dtype=np.float32), 3, sample_rate=16000)
        w.add_audio("long", np.zeros(8000), 3, sample_rate=8000)
    acc = load_run(logdir)
    (four,) = acc.Audio("four")
    assert four.step == 3 and four.content_type == "audio/wav"
    assert four.sample_rate == 16000 and four.length_frames == 4
    assert len(four.encoded_audio_string) == 52
    samples, channels, rate = decode(four.encoded_audio_string)
    assert channels == 1 and rate == 16000
    assert samples[:, 0].tolist() == [16383, -16383, 32767, 0]
    long = acc.Audio("long")[0]
    assert len(long.encoded_audio_string) == 16044 and long.length_frames == 8000


@pytest.mark.parametrize("shape", [(100,), (1, 100), (100, 1)])
def test_mono_shapes_identical_to_torch(logdir, shape):
    from torch.utils.tensorboard.summary import audio

    x = np.random.default_rng(0).uniform(-1, 1, 100).astype(np.float32)
    with SummaryWriter(logdir) as w:
        w.add_audio("a", x.reshape(shape), sample_rate=22050)
    ours = next(e for e in raw_events(logdir) if e.HasField("summary")).summary.value[0]
    theirs = audio("a", torch.from_numpy(x.reshape(shape)), sample_rate=22050).value[0]
    assert ours.audio == theirs.audio  # same WAV bytes, rate, channels, frames, content type
    assert not ours.HasField("metadata")


def test_float64_and_list_match_torch(logdir):
    from torch.utils.tensorboard.summary import audio

    x = np.random.default_rng(1).uniform(-1, 1, 257)
    with SummaryWriter(logdir) as w:
        w.add_audio("f64", x)
        w.add_audio("list", x.tolist())
    acc = load_run(logdir)
    expected = audio("t", x).value[0].audio.encoded_audio_string
    assert acc.Audio("f64")[0].encoded_audio_string == expected
    assert acc.Audio("list")[0].encoded_audio_string == expected


def test_stereo_interleaved(logdir):
    left = np.linspace(-1, 1, 50)
    right = np.linspace(0.5, -0.5, 50)
    with SummaryWriter(logdir) as w:
        w.add_audio("s", np.stack([left, right], axis=1), sample_rate=8000)
    ev = next(e for e in raw_events(logdir) if e.HasField("summary"))
    audio = ev.summary.value[0].audio
    assert audio.num_channels == 2 and audio.length_frames == 50 and audio.sample_rate == 8000
    assert len(audio.encoded_audio_string) == 44 + 50 * 2 * 2
    samples, channels, _ = decode(audio.encoded_audio_string)
    assert channels == 2
    assert samples[:, 0].tolist() == (left * 32767).astype(np.int16).tolist()
    assert samples[:, 1].tolist() == (right * 32767).astype(np.int16).tolist()
    data, rate = soundfile.read(io.BytesIO(audio.encoded_audio_string), dtype="int16")
    assert rate == 8000 and data.shape == (50, 2) and (data == samples).all()


def test_clipping_warns(logdir):
    with SummaryWriter(logdir) as w:
        with pytest.warns(
            UserWarning, match="audio amplitude out of range, auto clipped"
        ) as record:
            w.add_audio("c", [2.0, -3.0, 0.25, np.nan])
        w.add_audio("one", 0.5)  # a single sample
    assert record[0].filename == __file__  # the warning points at the caller's line
    assert decode(load_run(logdir).Audio("one")[0].encoded_audio_string)[0].tolist() == [[16383]]
    with SummaryWriter(logdir) as w:
        pass
    samples, _, _ = decode(load_run(logdir).Audio("c")[0].encoded_audio_string)
    assert samples[:, 0].tolist() == [32767, -32767, 8191, 0]


def test_integer_bool_float16_and_torch_inputs(logdir):
    with SummaryWriter(logdir) as w:
        w.add_audio("f16", np.array([1.0, -1.0, 0.5], dtype=np.float16))
        w.add_audio("bool", np.array([True, False]))
        w.add_audio("torch", torch.tensor([[0.5, -0.25]]))
    acc = load_run(logdir)
    assert decode(acc.Audio("f16")[0].encoded_audio_string)[0][:, 0].tolist() == [
        32767,
        -32767,
        16383,
    ]
    assert decode(acc.Audio("bool")[0].encoded_audio_string)[0][:, 0].tolist() == [32767, 0]
    assert decode(acc.Audio("torch")[0].encoded_audio_string)[0][:, 0].tolist() == [16383, -8191]


def test_add_value_audio(logdir):
    with SummaryWriter(logdir) as w:
        w.add_value("audio", "v", np.full(10, 0.5), 4)
    (event,) = load_run(logdir).Audio("v")
    assert event.step == 4 and event.sample_rate == 44100 and event.length_frames == 10
    assert decode(event.encoded_audio_string)[0][:, 0].tolist() == [16383] * 10


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (
            (np.zeros((2, 3, 4)),),
            {},
            ValueError,
            r"snd_tensor must have shape \(L,\) or \(1, L\) for mono",
        ),
        ((np.zeros((3, 10)),), {}, ValueError, r"got \(3, 10\)"),
        ((np.zeros(0),), {}, ValueError, "snd_tensor is empty"),
        ((np.zeros(4, dtype=np.complex64),), {}, TypeError, "snd_tensor must hold real numbers"),
        (("loud",), {}, TypeError, "snd_tensor must be numeric"),
        (
            (np.zeros(4),),
            {"sample_rate": 0},
            ValueError,
            "sample_rate must be a finite number >= 1",
        ),
        ((np.zeros(4),), {"sample_rate": float("nan")}, ValueError, "sample_rate must be a finite"),
        ((np.zeros(4),), {"sample_rate": "44100"}, TypeError, "sample_rate must be a number"),
        ((np.zeros(4), 1.5), {}, TypeError, "global_step must be an int"),
    ],
)
def test_bad_input_raises_in_caller(logdir, args, kwargs, error, message):
    with SummaryWriter(logdir) as w:
        with pytest.raises(error, match=message):
            w.add_audio("a", *args, **kwargs)
        with pytest.raises(ValueError, match="value must have shape"):
            w.add_value("audio", "a", np.zeros((2, 2, 2)))
        w.flush()
    assert [e for e in raw_events(logdir) if e.HasField("summary")] == []
