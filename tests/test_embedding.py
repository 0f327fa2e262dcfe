"""add_embedding: files read back with the projector's own config proto, NumPy and Pillow."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from google.protobuf import text_format
from PIL import Image
from tallyboard import SummaryWriter
from tallyboard_embedding.methods import escape_tag, format_tsv
from tensorboard.plugins.projector import projector_config_pb2


def _config(logdir: Path) -> Any:
    return text_format.Parse(
        (logdir / "projector_config.pbtxt").read_text(), projector_config_pb2.ProjectorConfig()
    )


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "tfevents" not in p.name
    )


def test_files_and_config(logdir: Path) -> None:
    mat = torch.randn(10, 4)
    labels = [f"l{i}" for i in range(10)]
    imgs = torch.rand(10, 3, 8, 8)
    with SummaryWriter(logdir) as w:
        w.add_embedding(mat, metadata=labels, label_img=imgs, global_step=1, tag="emb/one")
    sub = logdir / "00001" / "emb%2fone"
    back = np.loadtxt(sub / "tensors.tsv", delimiter="\t", dtype=np.float32)
    assert np.array_equal(back, mat.numpy())
    assert (sub / "metadata.tsv").read_text() == "".join(f"{x}\n" for x in labels)
    sprite = Image.open(sub / "sprite.png")
    assert sprite.size == (32, 32) and sprite.mode == "RGB"  # ceil(sqrt(10)) = 4 tiles per side
    expected = np.clip(imgs[5].permute(1, 2, 0).numpy() * 255, 0, 255).astype(np.uint8)
    assert np.array_equal(np.asarray(sprite)[8:16, 8:16], expected)  # image 5: row 1, column 1
    (info,) = _config(logdir).embeddings
    assert info.tensor_name == "emb/one:00001"
    assert info.tensor_path == "00001/emb%2fone/tensors.tsv"
    assert info.metadata_path == "00001/emb%2fone/metadata.tsv"
    assert info.sprite.image_path == "00001/emb%2fone/sprite.png"
    assert list(info.sprite.single_image_dim) == [8, 8]
    assert not list(logdir.glob("**/.tmp-*"))


def test_metadata_header_and_numpy_label_images(logdir: Path) -> None:
    mat = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    with SummaryWriter(logdir) as w:
        w.add_embedding(
            mat,
            metadata=[[1, "a"], [2, "b"], [3, "c"]],
            metadata_header=["n", "s"],
            label_img=np.ones((3, 1, 4, 6)),
        )
    sub = logdir / "00000" / "default"
    assert (sub / "metadata.tsv").read_text() == "n\ts\n1\ta\n2\tb\n3\tc\n"
    assert np.array_equal(
        np.loadtxt(sub / "tensors.tsv", delimiter="\t"), mat
    )  # float64 kept exactly
    sprite = Image.open(sub / "sprite.png")
    assert sprite.size == (12, 8)  # non-square 6 wide x 4 high, 2 x 2 tiles
    assert np.asarray(sprite)[:4, :12].min() == 255 and np.asarray(sprite)[4:, 6:].max() == 0
    assert list(_config(logdir).embeddings[0].sprite.single_image_dim) == [6, 4]


def test_float32_text_round_trips_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 21_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array(
        [0.0, -0.0, 1e-45, -3.4028235e38, 9.9999999, 1.0, 0.1, 1e10, 123456789.0], dtype=np.float32
    )
    mat = np.concatenate([bits[np.isfinite(bits)][:19_991], special]).reshape(-1, 100)
    text = format_tsv(mat).decode()
    back = np.array(
        [[float(v) for v in row.split("\t")] for row in text.splitlines()], dtype=np.float32
    )
    assert np.array_equal(back.view(np.uint32), mat.view(np.uint32))
    with_nan = np.array([[np.nan, np.inf, -1.5]], dtype=np.float32)
    assert format_tsv(with_nan) == b"nan\tinf\t-1.5\n"


def test_earlier_writers_entries_are_kept_and_same_name_replaced(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_embedding(torch.zeros(2, 3), tag="a")
    with SummaryWriter(logdir) as w:
        w.add_embedding(torch.ones(2, 3), tag="b")
        with pytest.warns(UserWarning, match="exists"):
            w.add_embedding(torch.full((4, 3), 2.0), tag="a")
    names = [(e.tensor_name, e.tensor_path) for e in _config(logdir).embeddings]
    assert names == [("b:00000", "00000/b/tensors.tsv"), ("a:00000", "00000/a/tensors.tsv")]
    assert np.loadtxt(logdir / "00000" / "a" / "tensors.tsv").shape == (4, 3)


def test_pbtxt_injection_is_escaped(logdir: Path) -> None:
    tag = 'x"\n}\nmodel_checkpoint_path: "evil'
    with SummaryWriter(logdir) as w:
        w.add_embedding(torch.zeros(2, 2), tag=tag)
    config = _config(logdir)
    assert config.model_checkpoint_path == ""
    (info,) = config.embeddings
    assert info.tensor_name == tag + ":00000"
    assert (logdir / info.tensor_path).is_file()
    assert (logdir / "00000" / escape_tag(tag)).parent == logdir / "00000"


@pytest.mark.parametrize(
    "tag", ["../../../ESC5", "..", ".", "/abs/ESC5", "a\\..\\..\\ESC5", "a\0b", "%2e%2e"]
)
def test_tags_stay_inside_log_dir(tmp_path: Path, tag: str) -> None:
    logdir = tmp_path / "a" / "b" / "logdir"
    with SummaryWriter(logdir) as w:
        w.add_embedding(torch.zeros(2, 2), tag=tag)
    (info,) = _config(logdir).embeddings
    target = (logdir / info.tensor_path).resolve()
    assert target.is_file() and target.parent.parent == (logdir / "00000").resolve()
    assert [
        p for p in tmp_path.rglob("*") if logdir not in p.parents and p != logdir and p.is_file()
    ] == []


@pytest.mark.parametrize("step", ["../../../ESC5", 1.0, "1", [1]])
def test_step_must_be_an_int(logdir: Path, step: Any) -> None:
    with SummaryWriter(logdir) as w, pytest.raises(TypeError, match="global_step"):
        w.add_embedding(torch.zeros(2, 2), global_step=step)
    assert _files(logdir) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mat": torch.zeros(3)}, ValueError, "2-D"),
        ({"mat": "abc"}, TypeError, "mat"),
        ({"metadata": ["a"]}, ValueError, "1 labels but mat has 2 rows"),
        ({"metadata": ["a\tb", "c"]}, ValueError, "tab or newline"),
        (
            {"metadata": [[1], [2]], "metadata_header": ["x", "y"]},
            ValueError,
            "metadata\\[0\\] has 1 columns",
        ),
        ({"metadata_header": ["x"]}, ValueError, "without metadata"),
        ({"label_img": torch.zeros(3, 3, 4, 4)}, ValueError, "3 images but mat has 2"),
        ({"label_img": torch.zeros(2, 2, 4, 4)}, ValueError, "channels"),
        ({"label_img": torch.zeros(2, 3)}, ValueError, "label_img must be"),
        ({"label_img": np.zeros((2, 3, 8000, 10))}, ValueError, "at most 8192"),
        ({"tag": ""}, ValueError, "empty"),
        ({"tag": 3}, TypeError, "tag"),
        ({"global_step": -1}, ValueError, ">= 0"),
    ],
)
def test_bad_input_writes_nothing(
    logdir: Path, kwargs: dict[str, Any], error: type, match: str
) -> None:
    args = {"mat": torch.zeros(2, 2), **kwargs}
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_embedding(**args)
    assert _files(logdir) == [] and [p for p in logdir.iterdir() if p.is_dir()] == []


def test_sprite_size_limit_counts_tiles(logdir: Path) -> None:
    with SummaryWriter(logdir) as w, pytest.raises(ValueError, match="8192"):
        w.add_embedding(
            np.zeros((100, 4)), label_img=np.zeros((100, 1, 10, 820), dtype=np.uint8)
        )  # 10 x 820 = 8200 wide


def test_file_in_the_way_is_an_error_before_anything_changes(logdir: Path) -> None:
    (logdir / "00000").mkdir()
    (logdir / "00000" / "default").write_text("not a directory")
    with SummaryWriter(logdir) as w, pytest.raises(FileExistsError):
        w.add_embedding(torch.zeros(2, 2))
    assert not (logdir / "projector_config.pbtxt").exists()


def test_unparseable_config_is_not_overwritten(logdir: Path) -> None:
    (logdir / "projector_config.pbtxt").write_text("embeddings { nonsense")
    with SummaryWriter(logdir) as w, pytest.raises(ValueError, match="cannot be parsed"):
        w.add_embedding(torch.zeros(2, 2))
    assert (logdir / "projector_config.pbtxt").read_text() == "embeddings { nonsense"


def test_add_value_writes_the_same_files_as_add_embedding(tmp_path: Path) -> None:
    mat, labels = np.arange(12, dtype=np.float32).reshape(4, 3), ["a", "b", "c", "d"]
    with SummaryWriter(tmp_path / "method") as w:
        w.add_embedding(mat, metadata=labels, global_step=2, tag="e")
    with SummaryWriter(tmp_path / "value") as w:
        w.add_value("embedding", "e", {"mat": mat, "metadata": labels}, global_step=2)
        w.add_value("embedding", "bare", mat)
    for name in ("tensors.tsv", "metadata.tsv"):
        assert (tmp_path / "value" / "00002" / "e" / name).read_text() == (
            tmp_path / "method" / "00002" / "e" / name
        ).read_text()
    assert {e.tensor_name for e in _config(tmp_path / "value").embeddings} == {
        "e:00002",
        "bare:00000",
    }


def test_add_value_embedding_rejects_unknown_keys(logdir: Path) -> None:
    with SummaryWriter(logdir) as w, pytest.raises(ValueError, match="needs 'mat'"):
        w.add_value("embedding", "t", {"matrix": np.zeros((2, 2))})
    assert _files(logdir) == []


def test_matches_torch_files(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    mat, labels, imgs = torch.randn(5, 3), ["a", "b", "c", "d", "e"], torch.rand(5, 3, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with TorchWriter(tmp_path / "t") as tw:
            tw.add_embedding(mat, metadata=labels, label_img=imgs, global_step=3, tag="e/x")
    with SummaryWriter(tmp_path / "p") as w:
        w.add_embedding(mat, metadata=labels, label_img=imgs, global_step=3, tag="e/x")
    t, p = tmp_path / "t", tmp_path / "p"
    assert _files(t) == _files(p)
    assert _config(t) == _config(p)
    sub = os.path.join("00003", "e%2fx")
    assert (t / sub / "metadata.tsv").read_bytes() == (p / sub / "metadata.tsv").read_bytes()
    np.testing.assert_array_equal(
        np.loadtxt(t / sub / "tensors.tsv", dtype=np.float32),
        np.loadtxt(p / sub / "tensors.tsv", dtype=np.float32),
    )
    np.testing.assert_array_equal(
        np.asarray(Image.open(t / sub / "sprite.png")),
        np.asarray(Image.open(p / sub / "sprite.png")),
    )


def test_fsspec_url_log_dir() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    with SummaryWriter("memory://pb-embedding-test/run") as w:
        w.add_embedding(np.ones((3, 2), np.float32), metadata=["a", "b", "c"], tag="t/x")
        w.add_embedding(np.zeros((3, 2), np.float32), tag="y")
    config = text_format.Parse(
        fs.cat("/pb-embedding-test/run/projector_config.pbtxt").decode(),
        projector_config_pb2.ProjectorConfig(),
    )
    assert [e.tensor_name for e in config.embeddings] == ["t/x:00000", "y:00000"]
    assert fs.cat("/pb-embedding-test/run/00000/t%2fx/metadata.tsv") == b"a\nb\nc\n"
    assert not [p for p in fs.find("/pb-embedding-test") if ".tmp-" in p]
    fs.rm("/pb-embedding-test", recursive=True)
