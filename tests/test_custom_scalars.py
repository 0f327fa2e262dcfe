"""The custom_scalars kind: torch's Layout bytes at custom_scalars__config__."""

from __future__ import annotations

import pytest
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tensorboard.plugins.custom_scalar import layout_pb2
from torch.utils.tensorboard import summary as torch_summary

LAYOUT = {
    "Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
    "USA": {
        "dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]],
        "nasdaq": ["Margin", ["nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc"]],
    },
}


def config_values(logdir):
    return [
        (e.step, v) for e in raw_events(logdir) if e.HasField("summary") for v in e.summary.value
    ]


def test_layout_is_byte_identical_to_torch(logdir):
    with SummaryWriter(logdir) as w:
        w.add_custom_scalars(LAYOUT)
    ((step, value),) = config_values(logdir)
    theirs = torch_summary.custom_scalars(LAYOUT).value[0]
    assert step == 0 and value.tag == "custom_scalars__config__"
    assert value.SerializeToString() == theirs.SerializeToString()
    layout = layout_pb2.Layout.FromString(value.tensor.string_val[0])
    assert [c.title for c in layout.category] == ["Taiwan", "USA"]
    assert list(layout.category[0].chart[0].multiline.tag) == ["twse/0050", "twse/2330"]
    series = layout.category[1].chart[1].margin.series[0]
    assert (series.value, series.lower, series.upper) == ("nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc")
    assert (
        value.metadata.plugin_data.plugin_name == "custom_scalars"
        and value.metadata.plugin_data.content == b""
    )
    assert value.tensor.dtype == 7 and len(value.tensor.tensor_shape.dim) == 0


def test_helpers_and_add_value(logdir):
    with SummaryWriter(logdir) as w:
        w.add_custom_scalars_multilinechart(
            ["loss/train", "loss/val"], category="losses", title="both"
        )
        w.add_custom_scalars_marginchart(["acc", "acc_lo", "acc_hi"])
        w.add_value("custom_scalars", "ignored", {"c": {"t": ["Multiline", ["x"]]}})
    values = config_values(logdir)
    assert [v.tag for _, v in values] == ["custom_scalars__config__"] * 3
    layouts = [layout_pb2.Layout.FromString(v.tensor.string_val[0]) for _, v in values]
    assert (
        layouts[0].category[0].title == "losses" and layouts[0].category[0].chart[0].title == "both"
    )
    assert list(layouts[0].category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]
    assert (
        layouts[1].category[0].title == "default"
        and layouts[1].category[0].chart[0].title == "untitled"
    )
    assert layouts[1].category[0].chart[0].margin.series[0].upper == "acc_hi"
    assert list(layouts[2].category[0].chart[0].multiline.tag) == ["x"]
    multiline = torch_summary.custom_scalars(
        {"losses": {"both": ["Multiline", ["loss/train", "loss/val"]]}}
    )
    assert values[0][1].SerializeToString() == multiline.value[0].SerializeToString()


@pytest.mark.parametrize(
    ("layout", "error", "match"),
    [
        ({"c": {"t": ["Margin", ["a", "b"]]}}, ValueError, "Margin chart needs exactly 3 tags"),
        ({"c": {"t": ["Multiline", "loss"]}}, TypeError, "tags must be a list"),
        ({"c": {"t": ["Multiline", []]}}, ValueError, "tags is empty"),
        ({"c": {"t": ["Multiline", [1]]}}, TypeError, "str tags"),
        ({"c": {"t": ["Multiline"]}}, ValueError, "must be \\[type, tags\\]"),
        ({"c": ["Multiline", ["a"]]}, TypeError, "layout\\['c'\\] must be a dict"),
        ({1: {"t": ["Multiline", ["a"]]}}, TypeError, "category"),
        ({}, ValueError, "layout is empty"),
        ([("c", {})], TypeError, "layout must be a dict"),
    ],
)
def test_bad_layout(logdir, layout, error, match):
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_custom_scalars(layout)
    assert load_run(logdir).Tags()["tensors"] == []


def test_bad_helper_arguments(logdir):
    with SummaryWriter(logdir) as w:
        with pytest.raises(ValueError, match="exactly 3 tags"):
            w.add_custom_scalars_marginchart(["a", "b", "c", "d"])
        with pytest.raises(TypeError, match="tags must be a list"):
            w.add_custom_scalars_multilinechart("loss")
        with pytest.raises(TypeError, match="category"):
            w.add_custom_scalars_multilinechart(["a"], category=3)
    assert config_values(logdir) == []
