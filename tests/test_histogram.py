"""The histogram kind: torch's buckets, counts and bytes, read back by TensorBoard."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tallyboard_histogram.compute import Histogram, default_bucket_edges, histogram_of, tf_bins
from tallyboard_histogram.tfevents import histogram_proto_bytes
from tensorboard.compat.proto.summary_pb2 import HistogramProto
from torch.utils.tensorboard import summary as torch_summary


def torch_default_bins() -> list[float]:
    v, pos, neg = 1e-12, [], []
    while v < 1e20:
        pos.append(v)
        neg.append(-v)
        v *= 1.1
    return neg[::-1] + [0] + pos


def torch_histo_bytes(values, bins="tensorflow", max_bins=None) -> bytes:
    if isinstance(bins, str) and bins == "tensorflow":
        bins = torch_default_bins()
    return (
        torch_summary.histogram("t", values, bins, max_bins=max_bins)
        .value[0]
        .histo.SerializeToString()
    )


def our_histo_bytes(logdir, values, **kwargs) -> bytes:
    with SummaryWriter(logdir) as w:
        w.add_histogram("t", values, 3, **kwargs)
    (event,) = [e for e in raw_events(logdir) if e.HasField("summary")]
    assert not event.summary.value[0].HasField("metadata")
    return event.summary.value[0].histo.SerializeToString()


def test_default_edges_are_torchs_bit_for_bit(logdir):
    edges = default_bucket_edges()
    assert len(edges) == 1549 and edges[774] == 0.0
    assert edges[-1] == 9.920775621859783e19
    assert edges.tolist() == torch_default_bins()
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    tw = TorchWriter(str(logdir / "torch"))
    try:
        assert edges.tolist() == tw.default_bins
    finally:
        tw.close()


HOSTILE = np.concatenate(
    [
        default_bucket_edges(),
        np.nextafter(default_bucket_edges(), np.inf),
        np.nextafter(default_bucket_edges(), -np.inf),
        [
            np.nan,
            -np.nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            5e-324,
            -5e-324,
            1e-300,
            1e30,
            -1e30,
            1e20,
            -1e20,
        ],
    ]
)


@pytest.mark.parametrize(
    "values",
    [
        HOSTILE,
        np.random.default_rng(0).standard_normal(100_000)
        * 10.0 ** np.random.default_rng(1).integers(-15, 22, 100_000),
        np.random.default_rng(2).standard_cauchy(50_000) ** 3,
        np.array([np.nan, 1.0]),
    ],
    ids=["edges-and-neighbours", "all-magnitudes", "heavy-tails", "nan"],
)
def test_fast_tf_counts_equal_numpy_histogram(values):
    expected = np.histogram(values, bins=default_bucket_edges())[0]
    assert np.array_equal(
        tf_bins().counts(np.ascontiguousarray(values, dtype=np.float64)), expected
    )


@pytest.mark.parametrize(
    ("values", "limits", "counts"),
    [
        ([1.0], [0.917246389039776, 1.0089710279437536], [0, 1]),
        ([0.0, 0.0], [0.0, 1e-12], [0, 2]),
        ([-1.0], [-1.0089710279437536, -0.917246389039776], [0, 1]),
    ],
)
def test_worked_values_read_back(logdir, values, limits, counts):
    with SummaryWriter(logdir) as w:
        w.add_histogram("h", values, 7)
    (ev,) = load_run(logdir).Histograms("h")
    h = ev.histogram_value
    assert ev.step == 7
    assert list(h.bucket_limit) == limits and list(h.bucket) == counts
    assert (
        h.num == len(values)
        and h.sum == sum(values)
        and h.min == min(values)
        and h.max == max(values)
    )


def test_worked_bucket_positions():
    assert np.flatnonzero(histogram_of([1, 2, 3]).bucket_counts).tolist() == [1, 9, 13]
    assert len(histogram_of([1, 2, 3]).bucket_counts) == 14
    h = histogram_of([-1, 1])
    assert len(h.bucket_counts) == 583 and np.flatnonzero(h.bucket_counts).tolist() == [1, 582]
    h = histogram_of(np.arange(10), bins=5)
    assert h.bucket_limits.tolist() == [0, 1.8, 3.6, 5.4, 7.2, 9.0]
    assert h.bucket_counts.tolist() == [0, 2, 2, 2, 2, 2]
    h = histogram_of(np.arange(1024), bins="auto", max_bins=5)
    assert h.bucket_limits.tolist() == [0, 186, 372, 558, 744, 930, 1023]
    assert h.bucket_counts.tolist() == [0, 186, 186, 186, 186, 186, 94]
    assert (
        len(histogram_of(np.random.default_rng(0).standard_normal(100), max_bins=3).bucket_counts)
        <= 4
    )


RNG = np.random.default_rng(42)


@pytest.mark.parametrize(
    ("values", "kwargs"),
    [
        (RNG.standard_normal(1000), {}),
        (RNG.standard_normal(20_000).astype(np.float32), {}),
        (np.array([1.0]), {}),
        (np.array([[-3, 0, 5], [7, 7, 1]]), {}),
        (np.asfortranarray(RNG.standard_normal((30, 40))), {}),
        (np.array([0.0, -0.0, -2.5]), {}),
        (RNG.standard_normal(1000), {"bins": 10}),
        (RNG.standard_normal(1000), {"bins": "auto", "max_bins": 7}),
        (RNG.standard_normal(1000), {"bins": "fd"}),
        (RNG.standard_normal(1000), {"bins": np.linspace(-1, 1, 9)}),
        (RNG.standard_normal(1000), {"max_bins": 30}),
        (np.array([True, False, True]), {}),
    ],
    ids=[
        "normal",
        "float32",
        "one",
        "ints-2d",
        "fortran",
        "zeros",
        "bins10",
        "auto-max7",
        "fd",
        "edges",
        "tf-max30",
        "bool",
    ],
)
def test_histogram_proto_is_byte_identical_to_torch(logdir, values, kwargs):
    assert our_histo_bytes(logdir, values, **kwargs) == torch_histo_bytes(values, **kwargs)


def test_torch_tensor_inputs_match_torch(logdir):
    t = torch.randn(2, 500)
    assert our_histo_bytes(logdir / "a", t) == torch_histo_bytes(t)
    b = torch.randn(300).to(torch.bfloat16)
    ours = histogram_of(b)
    assert ours.sum == b.float().double().sum().item()  # bfloat16 upcast exactly


def test_hand_packed_proto_matches_protobuf():
    h = Histogram(-0.0, 0.0, 3.0, float("nan"), 1e300, np.array([1.0, 2.5]), np.array([0.0, 3.0]))
    ref = HistogramProto(
        min=-0.0,
        max=0.0,
        num=3,
        sum=float("nan"),
        sum_squares=1e300,
        bucket_limit=[1.0, 2.5],
        bucket=[0, 3],
    )
    assert histogram_proto_bytes(h) == ref.SerializeToString()


def test_encoder_accepts_raw_arrays_as_pooled_by_the_mindspore_face():
    from tallyboard_histogram.tfevents import encode
    from tensorboard.compat.proto.event_pb2 import Event

    values = np.random.default_rng(5).standard_normal(300)
    event = Event.FromString(encode("h", 1, 2.0, values))
    assert event.summary.value[0].histo.SerializeToString() == torch_histo_bytes(values)


def test_add_value_and_raw(logdir):
    with SummaryWriter(logdir) as w:
        w.add_value("histogram", "v", [1.0], 1)
        w.add_histogram_raw("r", 0, 10, 5, 20, 100, [1, 5, 10], [1, 2, 2], global_step=2)
        w.add_histogram_raw(
            "r",
            min=0,
            max=1,
            num=1,
            sum=1,
            sum_squares=1,
            bucket_limits=torch.tensor([1.0]),
            bucket_counts=np.array([1]),
            global_step=3,
        )
    acc = load_run(logdir)
    assert list(acc.Histograms("v")[0].histogram_value.bucket) == [0, 1]
    first, second = acc.Histograms("r")
    h = first.histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0, 10, 5, 20, 100)
    assert list(h.bucket_limit) == [1, 5, 10] and list(h.bucket) == [1, 2, 2]
    assert second.step == 3 and list(second.histogram_value.bucket_limit) == [1.0]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"values": []}, ValueError, "values.*no element"),
        ({"values": np.zeros((0, 3))}, ValueError, "values.*no element"),
        ({"values": [np.nan, np.nan]}, ValueError, "values.*empty"),
        ({"values": np.array([1 + 2j])}, TypeError, "values"),
        ({"values": "abc"}, TypeError, "values"),
        ({"values": [1.0], "bins": "bogus"}, ValueError, "bins"),
        ({"values": [1.0], "bins": 0}, ValueError, "bins"),
        ({"values": [1.0], "bins": True}, TypeError, "bins"),
        ({"values": [1.0], "bins": [3.0, 1.0]}, ValueError, "bins"),
        ({"values": [1.0], "bins": [[1.0, 2.0]]}, ValueError, "bins"),
        ({"values": [1.0], "max_bins": 0}, ValueError, "max_bins"),
        ({"values": [1.0], "max_bins": 2.5}, TypeError, "max_bins"),
        ({"values": [np.inf, 1.0], "bins": "auto"}, ValueError, "values"),
        ({"values": [1.0], "global_step": 1.5}, TypeError, "global_step"),
    ],
)
def test_bad_input_raises_in_caller_and_writes_nothing(logdir, kwargs, error, match):
    with SummaryWriter(logdir) as w:
        w.add_histogram("ok", [1.0], 0)
        with pytest.raises(error, match=match):
            w.add_histogram("bad", **kwargs)
    acc = load_run(logdir)
    assert acc.Tags()["histograms"] == ["ok"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"bucket_limits": [1, 2], "bucket_counts": [1]},
            ValueError,
            "len\\(bucket_limits\\) != len\\(bucket_counts\\)",
        ),
        (
            {"bucket_limits": [[1, 2]], "bucket_counts": [[1, 2]]},
            ValueError,
            "bucket_limits must be 1-D",
        ),
        ({"bucket_limits": [], "bucket_counts": []}, ValueError, "bucket_limits"),
        ({"bucket_limits": [1], "bucket_counts": ["x"]}, TypeError, "bucket_counts"),
        ({"bucket_limits": [1], "bucket_counts": [1], "num": "five"}, TypeError, "num"),
        ({"bucket_limits": [1], "bucket_counts": [1], "min": [1, 2]}, ValueError, "min"),
    ],
)
def test_raw_validation(logdir, kwargs, error, match):
    args = {"min": 0, "max": 1, "num": 1, "sum": 1, "sum_squares": 1, **kwargs}
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_histogram_raw("r", **args)
    assert "r" not in load_run(logdir).Tags()["histograms"]
