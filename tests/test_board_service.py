"""The data-provider service over gRPC: every RPC and the corners of TensorBoard's protocol.

The provider runs in this process (``tallyboard.board.serve``) and is asked over a real gRPC
channel with the stubs TensorBoard ships, as TensorBoard's frontend asks it.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tallyboard import SummaryWriter
from tallyboard.board import serve
from tallyboard.board.service import blob_key, parse_blob_key
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc


def _write(root: Path) -> None:
    with SummaryWriter(root / "early") as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=1000.0 + step)
        w.add_scalar("other", 0.1, 0, walltime=1000.0)
        w.add_image("img", np.zeros((3, 4, 6), np.float32), 0, walltime=1001.0)
        w.add_image("img", np.ones((3, 4, 6), np.float32), 1, walltime=1002.0)
        w.add_histogram("h", np.arange(10.0), 0, walltime=1001.0)
        w.add_hparams({"lr": 0.5}, {"m": 1.0}, run_name="trial")
    with SummaryWriter(root / "late", sinks=["csv"]) as w:
        w.add_scalar("loss", 2.0 / 3.0, 0, walltime=500.0)
    with SummaryWriter(root / "quiet") as w:  # a file, no value yet
        w.flush()
    with SummaryWriter(root / "later") as w:  # a value an hour after the file's header
        w.add_scalar("loss", 0.5, 0, walltime=time.time() + 3600)
    (root / "empty").mkdir()


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("svc")
    _write(root)
    with serve(str(root), reload=0) as server:
        assert server.wait_loaded(60)
        channel = grpc.insecure_channel(server.address)
        stub = pb_grpc.TensorBoardDataProviderStub(channel)
        stub.root = str(root)
        yield stub
        channel.close()


def _scalars(stub: Any, **fields: Any) -> Any:
    req = pb.ReadScalarsRequest(**fields)
    req.plugin_filter.plugin_name = "scalars"
    return {
        (r.run_name, t.tag_name): list(zip(t.data.step, t.data.value))
        for r in stub.ReadScalars(req).runs
        for t in r.tags
    }


def _first_event_wall_time(run_dir: Path) -> float:
    """The wall time of the first event of a run's first event file, read by TensorBoard."""
    from tensorboard.backend.event_processing import event_file_loader

    (path,) = sorted(run_dir.glob("*tfevents*"))
    return float(next(iter(event_file_loader.EventFileLoader(str(path)).Load())).wall_time)


def test_runs_are_listed_by_start_time_the_wall_time_of_their_first_event(stub: Any) -> None:
    runs = stub.ListRuns(pb.ListRunsRequest()).runs
    names = [r.name for r in runs]
    assert names[0] == "late" and runs[0].start_time == 500.0  # a CSV: its first value
    assert sorted(names) == ["early", "early/trial", "late", "later", "quiet"]
    assert "empty" not in names  # a folder with no file is no run
    starts = {r.name: r.start_time for r in runs}
    # an event file's first event (its header), not its first value (logged an hour later)
    assert starts["later"] == _first_event_wall_time(Path(stub.root) / "later")
    # a run whose file holds no value yet is listed, as TensorBoard lists it
    assert starts["quiet"] == _first_event_wall_time(Path(stub.root) / "quiet")
    # values stamped before the file's header (at 1000 s): the earliest, as RustBoard
    assert starts["early"] == 1000.0
    assert [r.start_time for r in runs] == sorted(r.start_time for r in runs)


def test_experiment_names_its_log_dir_only(stub: Any) -> None:
    res = stub.GetExperiment(pb.GetExperimentRequest())
    assert res.data_location == stub.root
    assert not res.HasField("creation_time")  # as RustBoard and TensorBoard's loader answer


def test_plugins_are_those_holding_data(stub: Any) -> None:
    names = {p.name for p in stub.ListPlugins(pb.ListPluginsRequest()).plugins}
    assert names == {"scalars", "images", "histograms", "hparams"}


def test_scalars_travel_as_float32_values(stub: Any) -> None:
    got = _scalars(stub, downsample=pb.Downsample(num_points=100))
    assert got[("late", "loss")] == [(0, float(np.float32(2.0 / 3.0)))]
    assert got[("late", "loss")][0][1] != 2.0 / 3.0


def test_an_absent_filter_matches_all_and_a_present_empty_one_nothing(stub: Any) -> None:
    everything = _scalars(stub, downsample=pb.Downsample(num_points=10))
    assert ("early", "other") in everything
    rtf = pb.RunTagFilter(runs=pb.RunFilter(names=[]))
    assert _scalars(stub, downsample=pb.Downsample(num_points=10), run_tag_filter=rtf) == {}
    rtf = pb.RunTagFilter(tags=pb.TagFilter(names=[]))
    assert _scalars(stub, downsample=pb.Downsample(num_points=10), run_tag_filter=rtf) == {}
    rtf = pb.RunTagFilter(
        runs=pb.RunFilter(names=["early", "nope"]), tags=pb.TagFilter(names=["loss"])
    )
    assert list(_scalars(stub, downsample=pb.Downsample(num_points=10), run_tag_filter=rtf)) == [
        ("early", "loss")
    ]


def test_downsampling_ends_at_the_last_point_and_zero_means_zero(stub: Any) -> None:
    one = _scalars(stub, downsample=pb.Downsample(num_points=1))
    assert one[("early", "loss")] == [(4, float(np.float32(0.2)))]
    three = _scalars(stub, downsample=pb.Downsample(num_points=3))
    assert [s for s, _ in three[("early", "loss")]] == [0, 1, 4]  # RustBoard's pick
    zero = _scalars(stub, downsample=pb.Downsample(num_points=0))
    assert all(points == [] for points in zero.values())


@pytest.mark.parametrize(
    "call, request_",
    [
        ("ListScalars", pb.ListScalarsRequest()),
        ("ReadScalars", pb.ReadScalarsRequest(downsample=pb.Downsample(num_points=1))),
        ("ListTensors", pb.ListTensorsRequest()),
        ("ReadBlobSequences", pb.ReadBlobSequencesRequest(downsample=pb.Downsample(num_points=1))),
    ],
)
def test_an_empty_plugin_name_is_an_invalid_argument(stub: Any, call: str, request_: Any) -> None:
    with pytest.raises(grpc.RpcError) as err:
        getattr(stub, call)(request_)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "plugin name" in err.value.details()


def test_a_read_without_or_with_a_negative_downsample_is_an_invalid_argument(stub: Any) -> None:
    for req, words in [
        (pb.ReadTensorsRequest(), "downsample"),
        (pb.ReadTensorsRequest(downsample=pb.Downsample(num_points=-1)), "non-negative"),
    ]:
        req.plugin_filter.plugin_name = "histograms"
        with pytest.raises(grpc.RpcError) as err:
            stub.ReadTensors(req)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert words in err.value.details()


def test_list_metadata_gives_max_step_wall_time_and_the_first_values_metadata(stub: Any) -> None:
    req = pb.ListScalarsRequest()
    req.plugin_filter.plugin_name = "scalars"
    entries = {
        (r.run_name, t.tag_name): t.metadata for r in stub.ListScalars(req).runs for t in r.tags
    }
    meta = entries[("early", "loss")]
    assert (meta.max_step, meta.max_wall_time) == (4, 1004.0)
    assert meta.summary_metadata.plugin_data.plugin_name == "scalars"
    assert meta.summary_metadata.data_class == 1  # DATA_CLASS_SCALAR
    req = pb.ListBlobSequencesRequest()
    req.plugin_filter.plugin_name = "images"
    (run,) = stub.ListBlobSequences(req).runs
    assert (run.run_name, run.tags[0].metadata.max_length) == ("early", 3)  # width, height, png


def test_hparams_arrive_as_the_hparams_plugins_tensor_metadata(stub: Any) -> None:
    from tensorboard.plugins.hparams import plugin_data_pb2

    req = pb.ListTensorsRequest()
    req.plugin_filter.plugin_name = "hparams"
    (run,) = stub.ListTensors(req).runs
    assert run.run_name == "early/trial"
    contents = {
        t.tag_name: plugin_data_pb2.HParamsPluginData.FromString(
            t.metadata.summary_metadata.plugin_data.content
        )
        for t in run.tags
    }
    start = contents["_hparams_/session_start_info"].session_start_info
    assert start.hparams["lr"].number_value == 0.5


def test_tensors_are_read_as_tensor_protos(stub: Any) -> None:
    from tensorboard.util import tensor_util

    req = pb.ReadTensorsRequest(downsample=pb.Downsample(num_points=10))
    req.plugin_filter.plugin_name = "histograms"
    (run,) = stub.ReadTensors(req).runs
    (tag,) = run.tags
    hist = tensor_util.make_ndarray(tag.data.value[0])
    assert hist.shape[1] == 3 and math.isclose(hist[:, 2].sum(), 10)


def _blob_refs(stub: Any) -> list[str]:
    req = pb.ReadBlobSequencesRequest(downsample=pb.Downsample(num_points=10))
    req.plugin_filter.plugin_name = "images"
    (run,) = stub.ReadBlobSequences(req).runs
    (tag,) = run.tags
    assert list(tag.data.step) == [0, 1]
    return [ref.blob_key for seq in tag.data.values for ref in seq.blob_refs]


def test_blobs_are_read_by_key_and_an_unknown_key_is_refused(stub: Any) -> None:
    keys = _blob_refs(stub)
    assert len(keys) == 6
    png = b"".join(r.data for r in stub.ReadBlob(pb.ReadBlobRequest(blob_key=keys[2])))
    assert png.startswith(b"\x89PNG")
    width = b"".join(r.data for r in stub.ReadBlob(pb.ReadBlobRequest(blob_key=keys[0])))
    assert width == b"6"
    with pytest.raises(grpc.RpcError) as err:
        list(stub.ReadBlob(pb.ReadBlobRequest(blob_key=blob_key("early", "img", 7, 0))))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "step 7" in err.value.details()
    with pytest.raises(grpc.RpcError) as err:
        list(stub.ReadBlob(pb.ReadBlobRequest(blob_key="not a key")))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def _refused(stub: Any, key: str) -> Any:
    with pytest.raises(grpc.RpcError) as err:
        list(stub.ReadBlob(pb.ReadBlobRequest(blob_key=key)))
    return err.value


def _b64(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "key, words",
    [
        (_b64(b'["early","img",true,0]'), "not a blob key of this provider"),  # a bool step
        (_b64(b'["early","img",1.0,0]'), "not a blob key of this provider"),
        (_b64(b'["early","img",0,-1]'), "not a blob key of this provider"),
        (_b64(b'["early","img",9223372036854775808,0]'), "not a blob key"),  # past int64
        (_b64(b'["early","img",0,0,0]'), "not a blob key of this provider"),
        (_b64(b"[" * 10_000), "not a blob key of this provider"),  # deep, within the size
        (_b64(b"[" * 200_000), "more than the 16,384"),  # 266,667 characters
        ("A" * 3_000_000, "more than the 16,384"),  # 3 MB: under gRPC's 4 MiB limit
        ("not a key", "not URL-safe base64"),
        ("", "not a blob key of this provider"),
    ],
)
def test_a_malformed_blob_key_is_an_invalid_argument_quoting_only_its_start(
    stub: Any, key: str, words: str
) -> None:
    err = _refused(stub, key)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert words in err.details()
    assert len(err.details()) < 200 and key[:40] in err.details()


def test_a_well_formed_key_of_nothing_served_is_not_found_quoting_only_a_prefix(
    stub: Any,
) -> None:
    err = _refused(stub, blob_key("r" * 10_000, "img", 0, 0))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert "r" * 40 in err.details() and "10,000 characters" in err.details()
    assert len(err.details()) < 200
    err = _refused(stub, blob_key("early", "loss", 0, 0))  # a scalar series: no blobs
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = _refused(stub, blob_key("early", "img", 0, 9))
    assert err.code() == grpc.StatusCode.NOT_FOUND and "no blob 9 of 3" in err.details()


def test_a_request_over_the_size_limit_is_refused_by_grpc(stub: Any) -> None:
    from tallyboard.board.service import MAX_REQUEST

    err = _refused(stub, "A" * (MAX_REQUEST + 1))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_blob_key_is_url_safe_and_round_trips() -> None:
    key = blob_key("a/b c", "tag/ü", 12, 2)
    assert all(c.isalnum() or c in "-_" for c in key)
    assert parse_blob_key(key) == ("a/b c", "tag/ü", 12, 2)
    with pytest.raises(ValueError, match="not a blob key"):
        parse_blob_key(blob_key("a", "b", 1, 0)[:-3])


def test_bad_arguments_of_serve_are_refused_in_the_call(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="logdir"):
        serve(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="port"):
        serve(str(tmp_path), port=70000)
    with pytest.raises(ValueError, match="reload"):
        serve(str(tmp_path), reload=-1)
    with pytest.raises(ValueError, match="deadline"):
        serve(str(tmp_path), deadline=0)
    with pytest.raises(ValueError, match="samples"):
        serve(str(tmp_path), samples={"scalars": -1})
    # the command line's words: both check through tallyboard.board.options
    with pytest.raises(TypeError, match="reload: expected a number of seconds >= 0"):
        serve(str(tmp_path), reload="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="deadline: expected a number of seconds > 0"):
        serve(str(tmp_path), deadline=float("inf"))
    with pytest.raises(TypeError, match="port: expected a port in 0..65535"):
        serve(str(tmp_path), port="80")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="follow must be a bool, got 'yes'"):
        serve(str(tmp_path), follow="yes")  # type: ignore[arg-type]


def test_a_host_other_than_loopback_is_warned_about(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the warning comes, nothing listens
    with warnings.catch_warnings(record=True) as caught, pytest.raises(OSError, match="listen"):
        warnings.simplefilter("always")
        serve(str(tmp_path), host="192.0.2.1")
    assert any("not loopback" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with serve(str(tmp_path), reload=0, host="127.0.0.1"):
            pass


def test_values_go_through_the_sink_that_says_it_writes_tensorboard_summaries(
    tmp_path: Path,
) -> None:
    import dataclasses

    from tallyboard import Reader, SinkSpec, get_registry
    from tallyboard.board.ingest import Ingest, summary_sink
    from tallyboard.board.store import Store

    with SummaryWriter(tmp_path / "a") as w:
        w.add_scalar("loss", 0.5, 0)
        w.add_text("note", "hello", 0)
    reg = get_registry()
    assert summary_sink(reg) == "tfevents"  # the plugin says so; the provider names no sink

    def ingest(sinks: dict[str, Any], encoders: dict[Any, Any]) -> tuple[Store, list[str]]:
        noted: list[str] = []
        store = Store()
        registry = dataclasses.replace(reg, sinks=sinks, encoders=encoders)
        batch = Reader(str(tmp_path)).poll().batches["a"]
        Ingest(store, lambda key, message: noted.append(message), registry).add("a", batch)
        return store, noted

    # another sink speaking TensorBoard's summaries, under another name: found by its role
    plain = {n: dataclasses.replace(s, tensorboard_summaries=False) for n, s in reg.sinks.items()}
    mirror = SinkSpec(name="mirror", open=reg.sinks["tfevents"].open, tensorboard_summaries=True)
    renamed = {(k, "mirror"): f for (k, sink), f in reg.encoders.items() if sink == "tfevents"}
    expected, _ = ingest(dict(reg.sinks), dict(reg.encoders))
    store, noted = ingest({**plain, "mirror": mirror}, renamed)
    assert sorted(store.runs["a"].series) == ["loss", "note/text_summary"] and noted == []
    assert store.points() == expected.points() == 2
    # none says so: nothing can be shown, and that is said
    store, noted = ingest(plain, dict(reg.encoders))
    assert store.points() == 0
    assert any("no installed sink writes TensorBoard's summaries" in m for m in noted), noted
    with pytest.raises(TypeError, match="tensorboard_summaries must be a bool"):
        SinkSpec(name="x", open=mirror.open, tensorboard_summaries="yes")  # type: ignore[arg-type]
