"""Text: torch's layout, rendered by TensorBoard's text plugin."""

from __future__ import annotations

import pytest
from conftest import load_run
from tallyboard import SummaryWriter
from tensorboard.util import tensor_util


def test_add_text_uses_torchs_tag_and_string_tensor(logdir):
    with SummaryWriter(logdir) as w:
        w.add_text("notes", "héllo", 3)
    acc = load_run(logdir)
    (event,) = acc.Tensors("notes/text_summary")
    assert event.step == 3
    arr = tensor_util.make_ndarray(event.tensor_proto)
    assert arr.shape == (1,) and arr[0] == "héllo".encode()
    meta = acc.SummaryMetadata("notes/text_summary")
    assert meta.plugin_data.plugin_name == "text" and meta.plugin_data.content == b""


def test_add_text_matches_torch_bytes(tmp_path):
    from tallyboard_text import encode_tfevents
    from tensorboard.compat.proto import event_pb2
    from torch.utils.tensorboard.summary import text as torch_text

    ours = event_pb2.Event.FromString(encode_tfevents("t", 1, 5.0, "**bold**"))
    assert ours.summary == torch_text("t", "**bold**")


def test_add_value_text_and_bad_text(logdir):
    with SummaryWriter(logdir) as w:
        w.add_value("text", "a", "x")
        with pytest.raises(TypeError, match="text_string must be a str"):
            w.add_text("a", 5)
        with pytest.raises(TypeError, match="value must be a str"):
            w.add_value("text", "a", b"bytes")
    assert len(load_run(logdir).Tensors("a/text_summary")) == 1
