"""``tallyboard_tfevents.tensors.to_ndarray`` gives what TensorBoard's ``tensor_util.make_ndarray``
gives, for packed ``tensor_content`` and for every repeated field writers use (torch and
tensorboardX write ``float_val`` / ``double_val``), padding included; and the reader decodes
values of every such form and counts the ones no kind takes."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tallyboard import SummaryWriter, read
from tallyboard.warn import ReadWarning
from tallyboard_tfevents.proto import Event, SummaryValue, TensorProto, metadata
from tallyboard_tfevents.tensors import to_ndarray
from tensorboard.compat.proto import types_pb2
from tensorboard.compat.proto.tensor_pb2 import TensorProto as TBTensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.util import tensor_util


def _proto(dtype: int, dims: list[int], **fields: Any) -> TBTensorProto:
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in dims])
    return TBTensorProto(dtype=dtype, tensor_shape=shape, **fields)


def _ours(proto: TBTensorProto) -> Any:
    return to_ndarray(TensorProto.FromString(proto.SerializeToString()))


CASES = [
    ("float_val", _proto(types_pb2.DT_FLOAT, [2, 3], float_val=[1.5, -2.0, 3, 4, 5, 6])),
    ("one float_val fills", _proto(types_pb2.DT_FLOAT, [4], float_val=[0.25])),
    ("double_val", _proto(types_pb2.DT_DOUBLE, [], double_val=[0.1])),
    ("int_val int32", _proto(types_pb2.DT_INT32, [3], int_val=[1, -2, 3])),
    ("int_val uint8", _proto(types_pb2.DT_UINT8, [2], int_val=[0, 255])),
    ("int_val int16", _proto(types_pb2.DT_INT16, [2], int_val=[-300, 300])),
    ("int_val int8", _proto(types_pb2.DT_INT8, [2], int_val=[-7, 7])),
    ("int_val uint16", _proto(types_pb2.DT_UINT16, [2], int_val=[0, 65535])),
    ("int64_val", _proto(types_pb2.DT_INT64, [2], int64_val=[-(2**40), 2**62])),
    ("bool_val", _proto(types_pb2.DT_BOOL, [3], bool_val=[True, False, True])),
    ("half_val", _proto(types_pb2.DT_HALF, [2], half_val=[0x3C00, 0xC000])),  # 1.0, -2.0
    ("scomplex_val", _proto(types_pb2.DT_COMPLEX64, [2], scomplex_val=[1, 2, 3, 4])),
    ("dcomplex_val", _proto(types_pb2.DT_COMPLEX128, [1], dcomplex_val=[1.5, -2.5])),
    ("string_val", _proto(types_pb2.DT_STRING, [2, 2], string_val=[b"a", b"b", b"c", b"d"])),
    ("string_val padded", _proto(types_pb2.DT_STRING, [3], string_val=[b"x"])),
    ("no data at all", _proto(types_pb2.DT_FLOAT, [0, 3])),
    (
        "tensor_content",
        _proto(
            types_pb2.DT_FLOAT,
            [2, 2],
            tensor_content=np.array([1, 2, 3, 4], "<f4").tobytes(),
        ),
    ),
    (
        "tensor_content int64",
        _proto(types_pb2.DT_INT64, [3], tensor_content=np.array([1, -1, 2**50], "<i8").tobytes()),
    ),
]


@pytest.mark.parametrize("name,proto", CASES, ids=[c[0] for c in CASES])
def test_to_ndarray_equals_make_ndarray(name: str, proto: TBTensorProto) -> None:
    want = tensor_util.make_ndarray(proto)
    got = _ours(proto)
    assert got is not None
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        assert got.dtype == want.dtype
        assert np.array_equal(got, want)


def test_forms_tensorboards_reader_refuses_read_as_tensorflow_reads_them() -> None:
    """TensorBoard's own make_ndarray has no uint32/uint64 and raises where TensorFlow's pads a
    short repeated field with its last value, or gives zeros for no data at all."""
    padded = _ours(_proto(types_pb2.DT_FLOAT, [2, 3], float_val=[1.5, 7.0]))
    assert padded.dtype == np.float32
    assert padded.tolist() == [[1.5, 7.0, 7.0], [7.0, 7.0, 7.0]]
    zeros = _ours(_proto(types_pb2.DT_INT32, [2]))
    assert zeros.dtype == np.int32 and zeros.tolist() == [0, 0]
    u32 = _ours(_proto(types_pb2.DT_UINT32, [2], uint32_val=[0, 2**32 - 1]))
    assert u32.dtype == np.uint32 and u32.tolist() == [0, 2**32 - 1]
    u64 = _ours(_proto(types_pb2.DT_UINT64, [1], uint64_val=[2**64 - 1]))
    assert u64.dtype == np.uint64 and u64.tolist() == [2**64 - 1]


def test_bfloat16_reads_as_exact_float32() -> None:
    bits = (np.array([1.0, -2.5, 3.140625], np.float32).view(np.uint32) >> 16).astype(np.uint16)
    packed = _proto(types_pb2.DT_BFLOAT16, [3], tensor_content=bits.tobytes())
    repeated = _proto(types_pb2.DT_BFLOAT16, [3], half_val=bits.tolist())
    for proto in (packed, repeated):
        got = _ours(proto)
        assert got.dtype == np.float32
        assert got.tolist() == [1.0, -2.5, 3.140625]


def test_content_that_does_not_fit_the_shape_is_no_array() -> None:
    assert _ours(_proto(types_pb2.DT_FLOAT, [3], tensor_content=b"\0" * 8)) is None
    assert _ours(_proto(types_pb2.DT_FLOAT, [1], float_val=[1, 2])) is None
    assert _ours(_proto(types_pb2.DT_RESOURCE, [1])) is None


def _log(path: Path, values: list[Any], step: int = 1) -> None:
    with SummaryWriter(str(path)) as w:
        w.add_event(Event(step=step, summary={"value": values}))


def test_repeated_field_forms_read_as_every_kind(tmp_path: Path) -> None:
    """torch's float_val pr curves and new-style scalars, TF's no-plugin tensors."""
    pr = np.arange(12, dtype=np.float32).reshape(6, 2)
    values = [
        SummaryValue(
            tag="pr",
            metadata=metadata("pr_curves"),
            tensor=TensorProto(dtype=1, tensor_shape={"dim": [{"size": 6}, {"size": 2}]}),
        ),
        SummaryValue(tag="s", metadata=metadata("scalars"), tensor=TensorProto(dtype=2)),
        SummaryValue(tag="t", tensor=TensorProto(dtype=9, tensor_shape={"dim": [{"size": 2}]})),
    ]
    values[0].tensor.float_val.extend(pr.reshape(-1).tolist())
    values[1].tensor.double_val.append(0.1)
    values[2].tensor.int64_val.extend([2**40, -1])
    _log(tmp_path, values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every value has a kind
        curves = read(str(tmp_path), kind="pr_curve")
        scalars = read(str(tmp_path))
        tensors = read(str(tmp_path), kind="tensor")
    assert np.array_equal(curves.loc[0, "true_positives"], pr[0])
    assert scalars["value"].tolist() == [0.1]
    assert tensors.loc[0, "value"].tolist() == [2**40, -1]


def test_unknown_plugin_is_counted_not_an_error(tmp_path: Path) -> None:
    tensor = TensorProto(dtype=3, tensor_shape={"dim": [{"size": 1}]}, int_val=[7])
    with SummaryWriter(str(tmp_path)) as w:
        value = SummaryValue(tag="x", metadata=metadata("someones_plugin"), tensor=tensor)
        w.add_event(Event(step=1, summary={"value": [value]}))
        # later values of the tag without metadata are of the same plugin
        w.add_event(Event(step=2, summary={"value": [SummaryValue(tag="x", tensor=tensor)]}))
        w.add_scalar("loss", 0.5, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scalars = read(str(tmp_path))
    (warning,) = [w for w in caught if issubclass(w.category, ReadWarning)]
    assert "'x' (plugin 'someones_plugin') x2" in str(warning.message)
    assert scalars["tag"].tolist() == ["loss"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        assert read(str(tmp_path), kind="tensor").empty


def test_metadata_of_a_tags_first_value_is_given_to_the_later_ones(tmp_path: Path) -> None:
    """TF1's FileWriter keeps the metadata on the first value of a tag only."""
    strings = [b"first", b"second", b"third"]
    values = [
        SummaryValue(
            tag="notes",
            tensor=TensorProto(dtype=7, string_val=[s]),
            **({"metadata": metadata("text")} if i == 0 else {}),
        )
        for i, s in enumerate(strings)
    ]
    with SummaryWriter(str(tmp_path)) as w:
        for i, value in enumerate(values):
            w.add_event(Event(step=i, summary={"value": [value]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = read(str(tmp_path), kind="text")
    assert text["value"].tolist() == ["first", "second", "third"]
    assert read(str(tmp_path), kind="tensor").empty


def _function_graph(prefix: str) -> Any:
    from tensorboard.compat.proto.graph_pb2 import GraphDef

    graph = GraphDef()
    graph.versions.producer = 1234
    x = graph.node.add(name=f"{prefix}x", op="Placeholder")
    x.attr["dtype"].type = 1
    call = graph.node.add(name="call", op="PartitionedCall", input=[f"{prefix}x", "^ctrl"])
    call.attr["f"].func.name = "__inference_f_7"
    graph.node.add(name="out", op="Identity", input=["call:0"])
    graph.library.function.add().signature.name = "__inference_f_7"
    graph.library.gradient.add(function_name="__inference_f_7", gradient_func="grad_f")
    return graph


@pytest.mark.parametrize("functions", [1, 2, 3])
def test_trace_export_graphs_equal_tensorboards_merge(tmp_path: Path, functions: int) -> None:
    """The GRAPHS tab's graph of a trace_export summary: TensorBoard merges the functions'
    pre-optimization graphs with prefixes; the graph read back is the same message."""
    from tensorboard.compat.proto.config_pb2 import RunMetadata
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.plugins.graph import graph_util

    meta = RunMetadata()
    for i in range(functions):
        meta.function_graphs.add().pre_optimization_graph.CopyFrom(_function_graph(f"f{i}_"))
    tensor = TensorProto(dtype=7, string_val=[meta.SerializeToString()])
    value = SummaryValue(
        tag="trace", metadata=metadata("graph_run_metadata_graph", b"1"), tensor=tensor
    )
    _log(tmp_path, [value], step=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = [dict(r) for _, r in read(str(tmp_path), kind="graph").iterrows()]
    want = graph_util.merge_graph_defs([f.pre_optimization_graph for f in meta.function_graphs])
    assert row["tag"] == "trace" and row["num_nodes"] == 3 * functions
    assert GraphDef.FromString(row["graph_def"]) == want
