"""``tallyboard convert`` / ``tallyboard.convert``: runs rewritten in another format, read back with
TensorBoard's own EventAccumulator and the independent MindSpore reader (tests/mindspore_reader.py).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
import tallyboard
from conftest import load_run
from PIL import Image, ImageSequence
from tallyboard import Kind, SummaryWriter, hookimpl

pytest_plugins = ["tallyboard.testing"]

RNG = np.random.default_rng(7)
WALL = 1_700_000_000.0


def pb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tallyboard", *args], capture_output=True, text=True, timeout=120
    )


# -- what TensorBoard sees ------------------------------------------------------------------


def _pixels(data: bytes) -> list[np.ndarray]:
    """Every frame of an encoded image as an array in the image's own mode (GIFs as RGB)."""
    with Image.open(io.BytesIO(data)) as im:
        if im.format == "GIF":
            return [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(im)]
        return [np.asarray(im)]


def _wav(data: bytes) -> tuple[int, int, bytes]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getnchannels(), w.getframerate(), w.readframes(w.getnframes())


def _hparams(content: bytes) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData.FromString(content)
    return MessageToDict(data.session_start_info)["hparams"]  # type: ignore[no-any-return]


def tensorboard_view(run: Path) -> dict[tuple[str, str], list[Any]]:
    """Every value TensorBoard's EventAccumulator reads from ``run``, decoded, per (kind, tag)."""
    from tensorboard.util import tensor_util

    acc = load_run(run)
    tags = acc.Tags()
    out: dict[tuple[str, str], list[Any]] = {}
    for t in tags["scalars"]:
        out["scalar", t] = [(e.step, e.wall_time, repr(e.value)) for e in acc.Scalars(t)]
    for t in tags["histograms"]:
        out["histogram", t] = [
            (e.step, e.wall_time, h.min, h.max, h.num, h.sum, h.sum_squares)
            + (list(h.bucket_limit), list(h.bucket))
            for e in acc.Histograms(t)
            for h in [e.histogram_value]
        ]
    for t in tags["images"]:
        out["image", t] = [
            (
                e.step,
                e.wall_time,
                e.width,
                e.height,
                [p.tolist() for p in _pixels(e.encoded_image_string)],
            )
            for e in acc.Images(t)
        ]
    for t in tags["audio"]:
        out["audio", t] = [
            (e.step, e.wall_time, e.content_type, e.sample_rate, e.length_frames)
            + (_wav(e.encoded_audio_string),)
            for e in acc.Audio(t)
        ]
    for t in tags["tensors"]:
        out["tensor", t] = []
        for e in acc.Tensors(t):
            arr = tensor_util.make_ndarray(e.tensor_proto)
            out["tensor", t].append((e.step, e.wall_time, arr.dtype.str, arr.shape, arr.tolist()))
    try:
        hparams = acc.PluginTagToContent("hparams")
    except KeyError:  # no hparams in this run
        hparams = {}
    for t, content in hparams.items():
        if t == "_hparams_/session_start_info":
            out["hparams", t] = [_hparams(content)]
    return out


def log_everything(run: Path) -> None:
    """One tallyboard run of every kind tallyboard decodes from tfevents (a child run for hparams)."""
    with SummaryWriter(str(run)) as w:
        for i in range(4):
            w.add_scalar("loss", 1.0 / (i + 1), i, walltime=WALL + i)
            w.add_scalar("acc", float("nan") if i == 2 else i / 4, i, walltime=WALL + i + 0.5)
            w.add_histogram("weights", RNG.normal(size=300) * (i + 1), i, walltime=WALL + i)
        w.add_image("rgb", RNG.random((3, 12, 20)), 1, walltime=WALL + 1.25)
        w.add_images("grid", RNG.random((3, 3, 6, 5)), 2, walltime=WALL + 2.25)
        w.add_video("clip", RNG.random((1, 3, 3, 8, 8)), 3, fps=5, walltime=WALL + 3.25)
        w.add_text("notes", "hello **world** ü", 1, walltime=WALL + 1.5)
        w.add_tensor("f32", RNG.normal(size=(2, 3)).astype(np.float32), 1, walltime=WALL + 1)
        w.add_tensor("i64", np.arange(5, dtype=np.int64) - 2**40, 2, walltime=WALL + 2)
        w.add_tensor("flags", np.array([True, False, True]), 3, walltime=WALL + 3)
        w.add_tensor("words", np.array(["a", "bé"]), 3, walltime=WALL + 3)
        stereo = np.stack([np.sin(np.arange(800) / 9), np.cos(np.arange(800) / 5)], axis=1)
        w.add_audio("voice", stereo * 0.5, 2, sample_rate=8000, walltime=WALL + 2.5)
        w.add_hparams({"lr": 0.01, "opt": "adam", "bn": True}, {"hp/acc": 0.75}, run_name="trial")


def _sorted_view(view: dict[tuple[str, str], list[Any]]) -> dict[tuple[str, str], list[Any]]:
    return {
        k: sorted(v, key=lambda x: (x[0], x[1])) if k[0] != "hparams" else v
        for k, v in view.items()
    }


def test_tfevents_to_tfevents_gives_tensorboard_the_same_values_of_every_kind(
    tmp_path: Path,
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    log_everything(src / "exp")
    summary = tallyboard.convert(str(src), str(dst), to="tfevents")
    for run in ("exp", "exp/trial"):
        want, got = tensorboard_view(src / run), tensorboard_view(dst / run)
        if run == "exp/trial":  # the session start as values; experiment and end as written
            assert got.pop(("hparams", "_hparams_/session_start_info")) == [
                {"lr": 0.01, "opt": "adam", "bn": True}
            ]
            want.pop(("hparams", "_hparams_/session_start_info"))
        assert sorted(got) == sorted(want)
        assert _sorted_view(got) == _sorted_view(want), run
    assert len(tensorboard_view(dst / "exp")["image", "clip"][0][4]) == 3  # the video's frames
    assert summary.not_converted == {}
    assert summary.runs == ["exp", "exp/trial"] and summary.files == 2
    assert summary.converted == {
        "scalar": 9,  # 8 + the trial's metric
        "histogram": 4,
        "image": 3,
        "text": 1,
        "tensor": 4,
        "audio": 1,
        "hparams": 3,  # experiment, session start, session end
    }


def test_torch_written_run_converts_to_the_same_tensorboard_values(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    src, dst = tmp_path / "torch", tmp_path / "out"
    w = TorchWriter(str(src))
    for i in range(3):
        w.add_scalar("loss", 2.0 - i, i, walltime=WALL + i)
        w.add_histogram("h", RNG.normal(size=100), i, walltime=WALL + i)
    w.add_image("gray", RNG.random((1, 7, 9)), 1, walltime=WALL + 1)
    w.add_image("rgba", RNG.random((4, 5, 6)), 1, walltime=WALL + 1)
    w.add_text("t", "from torch", 2, walltime=WALL + 2)
    w.add_audio("a", np.sin(np.arange(400) / 7), 2, sample_rate=16000, walltime=WALL + 2)
    w.close()
    summary = tallyboard.convert(src, dst, to="tfevents")
    assert summary.not_converted == {}
    want, got = tensorboard_view(src), tensorboard_view(dst)
    assert sorted(got) == sorted(want)
    assert _sorted_view(got) == _sorted_view(want)
    assert np.asarray(got["image", "rgba"][0][4][0]).shape == (5, 6, 4)


def test_gray_and_gray_alpha_pngs_keep_their_channels(tmp_path: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path / "src"))
    for mode, colorspace in (("L", 1), ("LA", 2)):
        pixels = RNG.integers(0, 256, (4, 5, len(mode)), dtype=np.uint8).squeeze()
        png = io.BytesIO()
        Image.fromarray(pixels, mode).save(png, format="PNG")
        image = Summary.Image(
            height=4, width=5, colorspace=colorspace, encoded_image_string=png.getvalue()
        )
        summary = Summary(value=[Summary.Value(tag=mode, image=image)])
        writer.add_event(Event(wall_time=WALL, step=1, summary=summary))
    writer.close()
    tallyboard.convert(tmp_path / "src", tmp_path / "dst", to="tfevents")
    want, got = tensorboard_view(tmp_path / "src"), tensorboard_view(tmp_path / "dst")
    assert got == want
    assert np.asarray(got["image", "L"][0][4][0]).shape == (4, 5)
    assert np.asarray(got["image", "LA"][0][4][0]).shape == (4, 5, 2)


# -- tfevents -> mindspore -------------------------------------------------------------------


def log_mindspore_kinds(w: SummaryWriter) -> None:
    """The kinds MindSpore summaries hold, with fixed wall times so two writers log the same."""
    rng = np.random.default_rng(3)
    for i in range(3):
        w.add_scalar("loss", 1.5 / (i + 1), i, walltime=WALL + i)
        w.add_histogram("w", rng.normal(size=500) + i, i, walltime=WALL + i + 0.25)
    w.add_image("img", rng.random((3, 10, 14)), 1, walltime=WALL + 1.5)
    w.add_images("batch", rng.random((2, 3, 4, 4)), 2, walltime=WALL + 2.5)
    w.add_tensor("t", rng.normal(size=(3, 2)), 2, walltime=WALL + 2)
    w.add_tensor("ints", np.arange(6, dtype=np.int32).reshape(2, 3), 2, walltime=WALL + 2)


def _ms_file(run: Path) -> Path:
    (path,) = [p for p in run.iterdir() if p.name.endswith("_MS")]
    return path


def _ms_values(run: Path) -> list[tuple[int, float, bytes]]:
    """(step, wall_time, serialized Summary.Value) of every value, checked by the reader."""
    out = []
    for event in msr.read_events(_ms_file(run)):
        if event.HasField("summary"):
            for value in event.summary.value:
                out.append((event.step, event.wall_time, value.SerializeToString()))
    return sorted(out)


def test_tfevents_to_mindspore_writes_what_the_mindspore_sink_writes_live(tmp_path: Path) -> None:
    src, live, dst = tmp_path / "src", tmp_path / "live", tmp_path / "dst"
    with SummaryWriter(str(src)) as w:
        log_mindspore_kinds(w)
    live.mkdir()  # the mindspore sink does not create its log dir
    with SummaryWriter(str(live), sinks=["mindspore"]) as w:
        log_mindspore_kinds(w)
    summary = tallyboard.convert(src, dst, to="mindspore")
    assert summary.converted == {"scalar": 3, "histogram": 3, "image": 2, "tensor": 2}
    assert summary.not_converted == {}
    converted = _ms_values(dst)
    assert len(converted) == 10
    assert converted == _ms_values(live)


def test_tfevents_to_mindspore_values_equal_the_source(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with SummaryWriter(str(src)) as w:
        log_mindspore_kinds(w)
    tallyboard.convert(src, dst, to="mindspore")
    acc = load_run(src)
    events = [e for e in msr.read_events(_ms_file(dst)) if e.HasField("summary")]
    got = {(e.summary.value[0].tag, e.step): (e.wall_time, e.summary.value[0]) for e in events}
    for e in acc.Scalars("loss"):
        wall, v = got["loss", e.step]
        assert (wall, v.scalar_value) == (e.wall_time, e.value)
    for e in acc.Histograms("w"):
        wall, v = got["w", e.step]
        h, want = v.histogram, e.histogram_value
        assert wall == e.wall_time
        assert (h.min, h.max, h.sum, h.count) == (want.min, want.max, want.sum, want.num)
        limits = list(want.bucket_limit)
        assert [(b.left, b.left + b.width) for b in h.buckets] == list(zip(limits, limits[1:]))
        assert [b.count for b in h.buckets] == list(want.bucket)[1:]
        assert list(want.bucket)[0] == 0
    for tag in ("img", "batch"):
        (e,) = acc.Images(tag)
        wall, v = got[tag, e.step]
        assert (wall, v.image.width, v.image.height) == (e.wall_time, e.width, e.height)
        assert (
            _pixels(v.image.encoded_image)[0].tolist()
            == _pixels(e.encoded_image_string)[0].tolist()
        )
    from tensorboard.util import tensor_util

    for tag, dtype in (("t", "DT_FLOAT64"), ("ints", "DT_INT32")):
        (e,) = acc.Tensors(tag)
        want = tensor_util.make_ndarray(e.tensor_proto)
        wall, v = got[tag, e.step]
        assert wall == e.wall_time and list(v.tensor.dims) == list(want.shape)
        assert v.tensor.data_type == msr.DATA_TYPES[dtype]
        assert list(v.tensor.float_data) == want.astype(np.float32).reshape(-1).tolist()


def test_kinds_mindspore_cannot_hold_are_counted_not_dropped(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    log_everything(src / "exp")
    summary = tallyboard.convert(src, dst, to="mindspore")
    assert summary.not_converted == {"text": 1, "audio": 1, "hparams": 3, "image": 1, "tensor": 1}
    assert "cannot hold text" in summary.reasons["text"]
    assert "'clip' at step 3" in summary.reasons["image"]  # the video: MindSpore has none
    assert "'words' at step 3" in summary.reasons["tensor"]  # strings: MindSpore has none
    assert summary.converted == {"scalar": 9, "histogram": 4, "image": 2, "tensor": 3}
    line = summary.not_converted_line()
    for part in ("audio 1", "hparams 3", "image 1", "tensor 1", "text 1"):
        assert part in line
    tags = {tag for _, tag, _, _ in msr.values(_ms_file(dst / "exp"))}
    assert tags == {"loss", "acc", "weights", "rgb", "grid", "f32", "i64", "flags"}


# -- the command line ------------------------------------------------------------------------


def test_cli_converts_and_reports_what_it_could_not_in_one_line(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    log_everything(src / "exp")
    out = pb("convert", str(src), str(dst), "--to", "mindspore")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("tallyboard convert:")]
    assert len(lines) == 2 and "converted 18 values" in lines[0]
    assert lines[1].startswith("tallyboard convert: not converted: ")
    for part in ("audio 1 (", "hparams 3 (", "image 1 (", "tensor 1 (", "text 1 ("):
        assert part in lines[1]
    assert "Traceback" not in out.stderr
    assert [p.name for p in (dst / "exp").iterdir() if p.is_file()] == [_ms_file(dst / "exp").name]
    assert len(msr.read_events(_ms_file(dst / "exp"))) > 10


def test_cli_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with SummaryWriter(str(src)) as w:
        w.add_scalar("x", 1.0, 0)
    cases = [
        (("convert", str(src), str(dst), "--to", "xml"), "names no installed sink"),
        (("convert", str(tmp_path / "missing"), str(dst), "--to", "tfevents"), "not a directory"),
        (("convert", str(src), str(src / "inner"), "--to", "tfevents"), "inside src"),
    ]
    for args, message in cases:
        out = pb(*args)
        assert out.returncode == 1, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr, out.stderr
        assert not dst.exists() and not (src / "inner").exists()
    out = pb("convert", str(src), str(dst))
    assert out.returncode == 2 and "--to" in out.stderr


def test_a_dst_holding_files_is_refused_unless_forced_and_nothing_is_overwritten(
    tmp_path: Path,
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with SummaryWriter(str(src)) as w:
        w.add_scalar("x", 1.0, 0, walltime=WALL)
    assert pb("convert", str(src), str(dst), "--to", "tfevents").returncode == 0
    (first,) = list(dst.iterdir())
    before = first.read_bytes()
    out = pb("convert", str(src), str(dst), "--to", "tfevents")
    assert out.returncode == 1 and "--force" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    with pytest.raises(FileExistsError, match="force=True"):
        tallyboard.convert(src, dst, to="tfevents")
    forced = pb("convert", str(src), str(dst), "--to", "tfevents", "--force")
    assert forced.returncode == 0, forced.stderr
    assert first.read_bytes() == before and len(list(dst.iterdir())) == 2
    assert [e.value for e in load_run(dst).Scalars("x")] == [1.0, 1.0]  # one from each file


def test_a_symlink_in_dst_cannot_send_a_run_outside_it(tmp_path: Path) -> None:
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    with SummaryWriter(str(src / "run")) as w:
        w.add_scalar("x", 1.0, 0)
    dst.mkdir()
    outside.mkdir()
    (dst / "run").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="outside dst"):
        tallyboard.convert(src, dst, to="tfevents", force=True)
    assert list(outside.iterdir()) == []


def test_python_api_rejects_bad_arguments_by_name(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path / "src")) as w:
        w.add_scalar("x", 1.0, 0)
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    with pytest.raises(TypeError, match="src"):
        tallyboard.convert(3, dst, to="tfevents")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dst"):
        tallyboard.convert(src, None, to="tfevents")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="to must be a str"):
        tallyboard.convert(src, dst, to=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="force"):
        tallyboard.convert(src, dst, to="tfevents", force="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="local directory"):
        tallyboard.convert(src, "memory://x", to="tfevents")
    assert not os.path.exists(dst)


# -- a third-party kind: core names none -----------------------------------------------------


class NotePlugin:
    """A kind ``note`` with a tfevents encoder and decoder and a from_row, plus a kind ``blob``
    that decodes but has no from_row."""

    @hookimpl
    def register_kinds(self, register: Any) -> None:
        register(Kind(name="note", convert=str, from_row=lambda r: (r["tag"], r["text"])))
        register(Kind(name="blob", convert=bytes))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        from tallyboard_tfevents.encoding import summary_event
        from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata

        def encode(plugin: str) -> Any:
            def fn(tag: str, step: Any, wall: float, payload: Any) -> bytes:
                data = payload.encode() if isinstance(payload, str) else payload
                t = TensorProto(dtype=DT_STRING, string_val=[data])
                v = SummaryValue(tag=tag, metadata=metadata(plugin), tensor=t)
                return summary_event(step, wall, [v])  # type: ignore[no-any-return]

            return fn

        register("note", "tfevents", encode("note"))
        register("blob", "tfevents", encode("blob"))

    @hookimpl
    def register_decoders(self, register: Any) -> None:
        def decode(plugin: str, key: str) -> Any:
            def fn(value: Any, step: int, wall: float) -> dict[str, Any] | None:
                if value.metadata.plugin_data.plugin_name != plugin:
                    return None
                data = value.tensor.string_val[0]
                return {key: data.decode() if key == "text" else data}

            return fn

        register("tfevents", "note", decode("note", "text"))
        register("tfevents", "blob", decode("blob", "data"))


def test_a_plugin_kind_converts_through_its_from_row(
    tmp_path: Path, register_plugin: Any, memory_sink: Any
) -> None:
    register_plugin(NotePlugin(), name="notes")
    with SummaryWriter(str(tmp_path / "src")) as w:
        w.add_value("note", "n", "first", 1, walltime=WALL)
        w.add_value("note", "n", "second", 2, walltime=WALL + 1)
        w.add_value("blob", "b", b"\x00\x01", 1, walltime=WALL)
    summary = tallyboard.convert(tmp_path / "src", tmp_path / "dst", to="memory")
    assert summary.converted == {"note": 2}
    assert summary.not_converted == {"blob": 1}
    assert "no from_row" in summary.reasons["blob"]
    got = [(r.kind, r.tag, r.step, r.wall_time, r.payload) for r in memory_sink.records]
    assert got == [("note", "n", 1, WALL, "first"), ("note", "n", 2, WALL + 1, "second")]


def test_from_row_must_be_callable() -> None:
    with pytest.raises(TypeError, match="from_row must be callable"):
        Kind(name="k", convert=str, from_row="nope")  # type: ignore[arg-type]


# -- mindspore -> tfevents -------------------------------------------------------------------


def test_summary_record_run_converts_to_tfevents_with_the_values_mindspore_files_hold(
    tmp_path: Path,
) -> None:
    from tallyboard import SummaryRecord
    from tensorboard.util import tensor_util

    src, dst = tmp_path / "ms", tmp_path / "tb"
    src.mkdir()
    rng = np.random.default_rng(11)
    with SummaryRecord(str(src)) as record:
        for step in (1, 2, 3):
            record.add_value("scalar", "loss", np.float32(1.0 / step))
            record.add_value("histogram", "w", rng.normal(size=400).astype(np.float32) * step)
            record.add_value("image", "img", rng.random((2, 3, 6, 5)).astype(np.float32))
            record.add_value("tensor", "ints", np.arange(6, dtype=np.int32).reshape(2, 3) * step)
            record.add_value("tensor", "f64", rng.normal(size=(4,)))
            record.record(step)
    summary = tallyboard.convert(src, dst, to="tfevents")
    assert summary.not_converted == {}
    assert summary.converted == {"scalar": 3, "histogram": 3, "image": 3, "tensor": 6}
    (ms_file,) = list(src.iterdir())
    source = [e for e in msr.read_events(ms_file) if e.HasField("summary")]
    acc = load_run(dst)
    assert sorted(acc.Tags()["scalars"]) == ["loss"]
    assert sorted(acc.Tags()["histograms"]) == ["w"]
    assert sorted(acc.Tags()["images"]) == ["img"]
    assert sorted(acc.Tags()["tensors"]) == ["f64", "ints"]
    seen = 0
    for event in source:
        for v in event.summary.value:
            kind = msr._which(v)
            if kind == "scalar_value":
                (e,) = [e for e in acc.Scalars(v.tag) if e.step == event.step]
                assert (e.wall_time, e.value) == (event.wall_time, v.scalar_value)
            elif kind == "histogram":
                (e,) = [e for e in acc.Histograms(v.tag) if e.step == event.step]
                h, b = e.histogram_value, v.histogram.buckets
                assert e.wall_time == event.wall_time
                assert (h.min, h.max, h.num, h.sum) == (
                    v.histogram.min,
                    v.histogram.max,
                    v.histogram.count,
                    v.histogram.sum,
                )
                assert list(h.bucket_limit) == [x.left for x in b] + [b[-1].left + b[-1].width]
                assert list(h.bucket) == [0] + [x.count for x in b]
            elif kind == "image":
                (e,) = [e for e in acc.Images(v.tag) if e.step == event.step]
                assert (e.wall_time, e.width, e.height) == (
                    event.wall_time,
                    v.image.width,
                    v.image.height,
                )
                assert _pixels(e.encoded_image_string)[0].tolist() == (
                    _pixels(v.image.encoded_image)[0].tolist()
                )
            else:
                (e,) = [e for e in acc.Tensors(v.tag) if e.step == event.step]
                got = tensor_util.make_ndarray(e.tensor_proto)
                dtype = {4: np.int32, 12: np.float64}[v.tensor.data_type]
                want = np.array(v.tensor.float_data, np.float32).astype(dtype)
                assert e.wall_time == event.wall_time and got.dtype == dtype
                assert got.tolist() == want.reshape(tuple(v.tensor.dims)).tolist()
            seen += 1
    assert seen == 15


def test_values_that_cannot_be_rebuilt_are_counted_with_the_reason(tmp_path: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path / "src"))
    values = [
        Summary.Value(tag="mp3", audio=Summary.Audio(sample_rate=8000, num_channels=1,
                      length_frames=3, encoded_audio_string=b"ID3\x00junk", content_type="audio/mpeg")),
        Summary.Value(tag="junk", image=Summary.Image(height=1, width=1, colorspace=3,
                      encoded_image_string=b"not an image")),
        Summary.Value(tag="ok", simple_value=2.5),
    ]  # fmt: skip
    writer.add_event(Event(wall_time=WALL, step=4, summary=Summary(value=values)))
    writer.close()
    # to event files, every value is copied as the file holds it: nothing is rebuilt
    copied = tallyboard.convert(tmp_path / "src", tmp_path / "copy", to="tfevents")
    assert copied.converted == {"audio": 1, "image": 1, "scalar": 1}
    assert not copied.not_converted
    summary = tallyboard.convert(tmp_path / "src", tmp_path / "dst", to="jsonl")
    assert summary.converted == {"scalar": 1}
    assert summary.not_converted == {"audio": 1, "image": 1}
    assert "'mp3' at step 4" in summary.reasons["audio"] and "WAV" in summary.reasons["audio"]
    assert "'junk' at step 4" in summary.reasons["image"]
    assert "Pillow" in summary.reasons["image"]
    assert [(e.step, e.value) for e in load_run(tmp_path / "copy").Scalars("ok")] == [(4, 2.5)]
    assert tallyboard.read(tmp_path / "dst")[["tag", "step", "value"]].values.tolist() == [
        ["ok", 4, 2.5]
    ]
