"""jax.Array values through the torch face: a value still being computed is read on the writer's
side, one already computed in the call.

Every value is read back with TensorBoard's EventAccumulator and compared with ``np.asarray``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tallyboard import SummaryWriter, values
from tensorboard.util import tensor_util

from tests.conftest import load_run, raw_events
from tests.jax_support import BIG, computing, slow

_slow, _BIG = slow, BIG


def test_add_scalar_returns_long_before_the_device_value_is_computed(logdir):
    # (A computation gated by a host callback would be deterministic, but the CPU client runs
    # one holding a callback in the dispatching call itself.)
    with SummaryWriter(logdir) as writer:
        start = time.perf_counter()
        loss = _slow(_BIG)
        dispatched = time.perf_counter()
        writer.add_scalar("loss", loss, 3)
        returned = time.perf_counter()
        loss.block_until_ready()
        computed = time.perf_counter()
    assert returned - dispatched < (computed - start) / 4, (start, dispatched, returned, computed)
    (event,) = load_run(logdir).Scalars("loss")
    assert (event.step, event.value) == (3, 0.25) and float(np.asarray(loss)) == 0.25


def _jsonl_values(logdir):
    lines = [json.loads(x) for f in sorted(logdir.glob("records*.jsonl")) for x in f.open()]
    return [(d["tag"], d["step"], d["value"]) for d in lines]


def test_a_jsonl_sink_makes_no_call_wait_for_a_device_value(logdir):
    """The JSONL sink writes a line by batches, in the caller's calls: a value still being
    computed is read when its batch is written, not in the call that logged it."""
    with SummaryWriter(logdir, sinks=["jsonl"]) as writer:
        start = time.perf_counter()
        loss = _slow(_BIG)
        dispatched = time.perf_counter()
        writer.add_scalar("loss", loss, 3)
        writer.add_scalar("lr", 0.5, 3)
        returned = time.perf_counter()
        loss.block_until_ready()
        computed = time.perf_counter()
    assert returned - dispatched < (computed - start) / 4, (start, dispatched, returned, computed)
    assert _jsonl_values(logdir) == [("loss", 3, 0.25), ("lr", 3, 0.5)]


def test_jax_scalars_reach_a_csv_sink(logdir):
    """(The CSV sink's batches joined a device value's deferred encode as text: TypeError.)"""
    [computing_loss] = computing(jnp.float32(0.25))
    with SummaryWriter(logdir, sinks=["csv"]) as writer:
        writer.add_scalar("loss", computing_loss, 0)
        for step in range(1, 12):
            writer.add_scalar("loss", jnp.float32(step) * 2, step)
    rows = (logdir / "scalars.csv").read_text().splitlines()
    assert rows[0] == "wall_time,step,tag,value"
    got = [(int(r.split(",")[1]), float(r.split(",")[3])) for r in rows[1:]]
    assert got == [(0, 0.25)] + [(step, step * 2.0) for step in range(1, 12)]


def test_a_jsonl_line_lost_on_its_device_costs_no_other_line(logdir, monkeypatch):
    monkeypatch.setattr(values, "COPY_DEVICE_VALUES", False)
    [lost] = computing(jnp.float32(0.5))
    with (
        pytest.warns(RuntimeWarning, match="'lr' at step 0 was deleted"),
        SummaryWriter(logdir, sinks=["jsonl"], sink_errors="warn") as writer,
    ):
        writer.add_scalar("loss", 0.25, 0)
        writer.add_scalar("lr", lost, 0)
        lost.delete()
        writer.add_scalar("loss", 0.5, 1)
        writer.flush()  # the lost line is found here; the others are written
        writer.add_scalar("loss", 0.75, 2)
    assert _jsonl_values(logdir) == [("loss", 0, 0.25), ("loss", 1, 0.5), ("loss", 2, 0.75)]


def test_a_computed_value_deleted_or_donated_after_the_call_still_reaches_the_file(logdir):
    step = jax.jit(lambda p: p * 3.0, donate_argnums=0)
    weights = jnp.arange(12.0).reshape(3, 4) * 1.5
    params = jnp.linspace(-1.0, 1.0, 50, dtype=jnp.float32)
    loss = weights.sum()
    jax.block_until_ready((weights, params, loss))
    expected = np.asarray(weights).copy(), np.asarray(params).copy()
    with SummaryWriter(logdir) as writer:
        writer.add_scalar("loss", loss, 0)
        writer.add_value("tensor", "weights", weights, 0)
        writer.add_value("tensor", "params", params, 0)
        loss.delete()
        weights.delete()
        step(params)
        assert params.is_deleted()
    run = load_run(logdir)
    assert run.Scalars("loss")[0].value == 99.0
    for tag, want in zip(("weights", "params"), expected):
        got = tensor_util.make_ndarray(run.Tensors(tag)[0].tensor_proto)
        np.testing.assert_array_equal(got, want)


def test_a_computing_scalar_deleted_after_the_call_is_reported_and_an_array_donated_is_kept(
    logdir,
):
    assert values.COPY_DEVICE_VALUES == "arrays"  # the default: arrays are copied, not scalars
    step = jax.jit(lambda p: p * 3.0, donate_argnums=0)
    loss, params = computing(jnp.float32(0.5), jnp.arange(4.0))
    writer = SummaryWriter(logdir)  # max_queue=10: the writer's thread reads nothing before flush
    writer.add_scalar("kept", 0.25, 0)
    writer.add_scalar("loss", loss, 7)
    writer.add_value("tensor", "params", params, 8)
    loss.delete()
    step(params)
    assert params.is_deleted()
    with pytest.warns(RuntimeWarning) as warned, pytest.raises(values.DeviceValueLost) as raised:
        writer.flush()
        writer.add_scalar("after", 1.0, 1)
    writer.close()
    assert "logged as 'loss' at step 7 was deleted or donated" in str(raised.value)
    assert "COPY_DEVICE_VALUES = True" in str(raised.value)
    assert [str(w.message) for w in warned] == [str(raised.value)]
    run = load_run(logdir)
    assert run.Scalars("kept")[0].value == 0.25 and run.Tags()["scalars"] == ["kept"]
    got = tensor_util.make_ndarray(run.Tensors("params")[0].tensor_proto)
    np.testing.assert_array_equal(got, np.arange(4.0, dtype=np.float32))


def test_without_the_device_copy_each_value_lost_is_warned_of(logdir, monkeypatch):
    monkeypatch.setattr(values, "COPY_DEVICE_VALUES", False)
    step = jax.jit(lambda p: p * 3.0, donate_argnums=0)
    loss, params = computing(jnp.float32(0.5), jnp.ones(4))
    writer = SummaryWriter(logdir)
    writer.add_scalar("loss", loss, 7)
    writer.add_value("tensor", "params", params, 8)
    loss.delete()
    step(params)
    with pytest.warns(RuntimeWarning) as warned, pytest.raises(values.DeviceValueLost):
        writer.flush()
    writer.close()
    lost = sorted(str(w.message).split(" was ")[0] for w in warned)  # each loss is warned of
    assert lost == [
        "the jax value logged as 'loss' at step 7",
        "the jax value logged as 'params' at step 8",
    ]


def test_in_warn_mode_a_lost_device_value_is_warned_of_and_the_sink_goes_on(logdir, monkeypatch):
    """A value lost on its device is that value's failure, not the sink's: with
    ``sink_errors="warn"`` the sink is not dropped, and the value of the call that hears of the
    loss, and every later one, reach the file."""
    monkeypatch.setattr(values, "COPY_DEVICE_VALUES", False)
    [lost] = computing(jnp.float32(0.5))
    writer = SummaryWriter(logdir, sink_errors="warn")
    with pytest.warns(RuntimeWarning) as warned:
        writer.add_scalar("lr", lost, 0)
        lost.delete()
        writer.flush()  # the writer's side finds the value gone
        for step in range(1, 4):
            writer.add_scalar("loss", step / 4, step)
        writer.close()
    messages = [str(w.message) for w in warned]
    assert any("logged as 'lr' at step 0 was deleted or donated" in m for m in messages), messages
    assert not any("is dropped" in m for m in messages), messages
    run = load_run(logdir)
    assert "lr" not in run.Tags()["scalars"]
    assert [(e.step, e.value) for e in run.Scalars("loss")] == [(1, 0.25), (2, 0.5), (3, 0.75)]


@pytest.mark.parametrize("sink_errors", ["warn", "raise"])
def test_the_call_that_hears_of_a_lost_value_still_writes_its_own(logdir, monkeypatch, sink_errors):
    """The loss is another value's: the call that hears of it (raising it, or in warn mode
    not) has its own value written, and the sink goes on."""
    monkeypatch.setattr(values, "COPY_DEVICE_VALUES", False)
    [lost] = computing(jnp.float32(0.5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = SummaryWriter(logdir, sink_errors=sink_errors, flush_secs=0.05)
        writer.add_scalar("lr", lost, 0)
        lost.delete()
        deadline = time.monotonic() + 30  # the writer's thread finds the value gone
        while not any(issubclass(w.category, RuntimeWarning) for w in caught):
            assert time.monotonic() < deadline, "the lost value was never read"
            time.sleep(0.01)
        raised = []
        for step in range(1, 4):  # the first of these hears of the loss
            try:
                writer.add_scalar("loss", step / 4, step)
            except values.DeviceValueLost as exc:
                raised.append((step, str(exc)))
        writer.close()
    if sink_errors == "raise":
        assert [s for s, _ in raised] == [1] and "'lr' at step 0" in raised[0][1], raised
    else:
        assert raised == []
    assert not any("is dropped" in str(w.message) for w in caught), [str(w.message) for w in caught]
    run = load_run(logdir)
    assert [(e.step, e.value) for e in run.Scalars("loss")] == [(1, 0.25), (2, 0.5), (3, 0.75)]


def test_with_the_device_copy_a_computing_value_deleted_or_donated_still_reaches_the_file(
    logdir, monkeypatch
):
    monkeypatch.setattr(values, "COPY_DEVICE_VALUES", True)
    step = jax.jit(lambda p: p * 3.0, donate_argnums=0)
    base = jnp.linspace(-1.0, 1.0, 50, dtype=jnp.float32)
    loss, params = computing(jnp.float32(0.5), base)
    with SummaryWriter(logdir) as writer:
        writer.add_scalar("loss", loss, 0)
        writer.add_value("tensor", "params", params, 0)
        loss.delete()
        step(params)
        assert params.is_deleted()
    run = load_run(logdir)
    assert run.Scalars("loss")[0].value == 0.5
    got = tensor_util.make_ndarray(run.Tensors("params")[0].tensor_proto)
    np.testing.assert_array_equal(got, np.asarray(base))


def test_histograms_of_jax_values_equal_those_of_their_numpy_arrays(logdir):
    data = jax.random.normal(jax.random.key(0), (1000,))
    with SummaryWriter(logdir / "jax") as writer:
        writer.add_value("histogram", "h", data, 0)
    with SummaryWriter(logdir / "numpy") as writer:
        writer.add_value("histogram", "h", np.asarray(data), 0)
    got = load_run(logdir / "jax").Histograms("h")[0].histogram_value
    want = load_run(logdir / "numpy").Histograms("h")[0].histogram_value
    assert got == want


def test_bfloat16_and_integer_scalars_read_exactly(logdir):
    with SummaryWriter(logdir) as writer:
        writer.add_scalar("bf16", jnp.array(1.5, jnp.bfloat16), 0)
        writer.add_scalar("int", jnp.array([7], jnp.int32), 0)
        writer.add_scalar("tensor", jnp.float32(0.1), 0, new_style=True, double_precision=True)
    run = load_run(logdir)
    assert run.Scalars("bf16")[0].value == 1.5
    assert run.Scalars("int")[0].value == 7.0
    tensor = tensor_util.make_ndarray(run.Tensors("tensor")[0].tensor_proto)
    assert tensor.dtype == np.float64 and float(tensor) == float(np.float32(0.1))


def test_bad_device_values_raise_in_the_call_and_nothing_accepted_is_lost(logdir):
    with SummaryWriter(logdir) as writer:
        writer.add_scalar("ok", jnp.float32(1.0), 0)
        with pytest.raises(ValueError, match="scalar_value must hold exactly one element"):
            writer.add_scalar("loss", jnp.ones(2), 1)
        with pytest.raises(TypeError, match="scalar_value must be a real number.*complex"):
            writer.add_scalar("loss", jnp.array(1 + 2j), 1)
        with pytest.raises(TypeError, match="global_step must be an int"):
            writer.add_scalar("loss", jnp.float32(1.0), 1.5)
        writer.add_scalar("ok", jnp.float32(2.0), 1)
    assert [e.value for e in load_run(logdir).Scalars("ok")] == [1.0, 2.0]


def test_a_traced_value_is_refused_with_where_to_log_it(logdir):
    with SummaryWriter(logdir) as writer:

        @jax.jit
        def step(x):
            writer.add_scalar("inside", x.sum(), 0)
            return x

        with pytest.raises(TypeError, match="traced jax value.*log it outside"):
            step(jnp.ones(3))


def test_pending_values_stay_within_the_bound(logdir, monkeypatch):
    monkeypatch.setattr(values, "MAX_PENDING_DEVICE_VALUES", 4)
    monkeypatch.setattr(values, "_pending", deque())
    numbers = computing(*(jnp.float32(i) for i in range(20)))
    with SummaryWriter(logdir, max_queue=1000) as writer:
        for i, number in enumerate(numbers):
            writer.add_scalar("x", number, i)
            assert len(values._pending) == min(i + 1, 4)
    assert [e.value for e in load_run(logdir).Scalars("x")] == [float(i) for i in range(20)]


def test_a_value_still_computing_is_written_under_the_step_and_tag_as_emit_writes_them(logdir):
    class Tag(str):
        pass

    numbers = computing(jnp.float32(0.5), jnp.float32(1.5))
    with SummaryWriter(logdir) as writer:
        writer.add_scalar("loss", numbers[0], np.int64(3))  # a NumPy step, as torch's accepts
        writer.add_scalar(Tag("other"), numbers[1], 4)
        assert not any(n.is_ready() for n in numbers)  # both checked, neither waited for
    run = load_run(logdir)
    assert [(e.step, e.value) for e in run.Scalars("loss")] == [(3, 0.5)]
    assert [(e.step, e.value) for e in run.Scalars("other")] == [(4, 1.5)]
    with SummaryWriter(logdir) as writer:  # the bad ones refused in the call, nothing pending
        (value,) = computing(jnp.float32(2.5))
        with pytest.raises(TypeError, match="global_step must be an int"):
            writer.add_scalar("loss", value, 2.0)
        with pytest.raises(ValueError, match="outside the int64 range"):
            writer.add_scalar("loss", value, 2**63)
    assert _kept() == []


def _kept():
    """The deferred values still held: by a writer, or by the bound's list alone."""
    return [p for p in (ref() for ref in values._pending) if p is not None]


def test_a_made_payload_is_let_go_once_the_writers_have_written_it(logdir):
    # A tensor's payload is its whole host array: nothing may keep it once it is in the file
    # (not the bound's list until the next call that tidies it).
    big, image, loss = computing(jnp.ones((500, 500)) * 2, jnp.ones((3, 8, 8)), jnp.float32(1))
    with SummaryWriter(logdir) as writer:
        writer.add_tensor("t", big, 0)
        writer.add_image("i", image, 0)
        writer.add_scalar("s", loss, 0)
        writer.flush()
        assert _kept() == []
    run = load_run(logdir)
    assert tensor_util.make_ndarray(run.Tensors("t")[0].tensor_proto).sum() == 2 * 500 * 500
    assert [e.value for e in run.Scalars("s")] == [1.0] and len(run.Images("i")) == 1


def test_a_value_asked_for_by_two_threads_at_once_is_made_once():
    # The writer's thread and a caller at the bound may both ask for the oldest pending value:
    # it is made (and a lost one warned of) once, and both get the same payload.
    made, entered, release = [], threading.Event(), threading.Event()

    def make(host):
        made.append(host)
        entered.set()
        assert release.wait(10)
        return float(host) * 2

    (pending,) = values.defer_device(make, [jnp.float32(1.5)])
    results = []
    first = threading.Thread(target=lambda: results.append(pending.result()))
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=lambda: results.append(pending.result()))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # it waits for the first
    release.set()
    first.join(10)
    second.join(10)
    assert results == [3.0, 3.0] and len(made) == 1 and pending.done


def test_a_writer_that_writes_nothing_keeps_no_device_value(logdir):
    (loss,) = computing(jnp.float32(0.5))
    with SummaryWriter(logdir, write_to_disk=False) as writer:
        writer.add_scalar("loss", loss, 0)
        assert not loss.is_ready()  # checked, not waited for
    assert _kept() == []  # nothing left for the bound to wait for


def test_a_sharded_array_reads_as_np_asarray(tmp_path):
    script = textwrap.dedent(
        f"""
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        from tallyboard import SummaryWriter
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        from tensorboard.util import tensor_util
        devices = jax.devices()
        assert len(devices) == 2, devices
        mesh = Mesh(np.array(devices), ("x",))
        x = jax.device_put(jnp.arange(16.0).reshape(8, 2), NamedSharding(mesh, PartitionSpec("x")))
        assert len(x.addressable_shards) == 2
        loss = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, PartitionSpec("x"))).sum()
        big = jnp.zeros((700, 700))
        slow = jax.jit(lambda a: jnp.tanh(jnp.tanh(jnp.tanh(a @ a) @ a) @ a).sum())
        after = jax.jit(lambda v, s: v + s * 0)
        after(x, slow(big)).block_until_ready()  # compiled
        y = after(x, slow(big))  # sharded as x, still being computed
        assert not y.is_ready() and len(y.addressable_shards) == 2
        with SummaryWriter({str(tmp_path)!r}) as writer:
            writer.add_value("tensor", "x", x, 0)
            writer.add_value("tensor", "y", y, 0)
            writer.add_scalar("loss", loss, 0)
        acc = EventAccumulator({str(tmp_path)!r}); acc.Reload()
        for tag, want in (("x", x), ("y", y)):
            got = tensor_util.make_ndarray(acc.Tensors(tag)[0].tensor_proto)
            np.testing.assert_array_equal(got, np.asarray(want))
        assert acc.Scalars("loss")[0].value == float(np.asarray(loss)) == 28.0
        print("ok")
        """
    )
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_plain_floats_never_look_for_jax():
    script = (
        "import sys, tempfile\n"
        "from tallyboard import SummaryWriter, values\n"
        "with SummaryWriter(tempfile.mkdtemp()) as w:\n"
        "    w.add_scalar('x', 1.0, 0); w.add_scalar('y', 2, 0); w.add_value('tensor', 't', [1.0], 0)\n"
        "assert not values.on_device(1.0) and not values.on_device(__import__('numpy').ones(2))\n"
        "print('jax' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_every_add_method_writes_for_a_jax_array_what_it_writes_for_its_numpy_array(logdir):
    rng = np.random.default_rng(3)  # NumPy made, put on the device: no jax op to compile
    image = rng.random((3, 16, 12), dtype=np.float32)
    calls = [
        ("add_image", (jnp.asarray(image),), {}),
        ("add_images", (jnp.asarray(np.stack([image, 1 - image])),), {}),
        ("add_histogram", (jnp.asarray(rng.normal(size=500)),), {"bins": 20}),
        ("add_audio", (jnp.asarray(np.sin(np.arange(800.0) / 10) * 0.5),), {"sample_rate": 8000}),
        ("add_tensor", (jnp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3)),), {}),
        ("add_video", (jnp.asarray(rng.random((1, 4, 3, 8, 8), dtype=np.float32)),), {"fps": 2}),
        ("add_scalar", (jnp.float32(0.5),), {}),
    ]
    later = computing(*(value for _, (value,), _ in calls))
    for run, convert in (("jax", lambda v: v), ("numpy", np.asarray)):
        with SummaryWriter(logdir / run) as writer:
            for step, (method, _, kwargs) in enumerate(calls):
                getattr(writer, method)(method, convert(later[step]), step, **kwargs)
    got, want = (
        [e.summary for e in raw_events(logdir / run) if e.HasField("summary")]
        for run in ("jax", "numpy")
    )
    assert len(got) == len(calls) and got == want


def test_a_reduced_tags_device_value_is_not_waited_for_in_the_call(logdir):
    loss, image = computing(jnp.float32(0.5), jnp.ones((3, 4, 4)))
    with SummaryWriter(logdir, reduce="mean") as writer:  # one process: the mean of rank 0's
        writer.add_scalar("loss", loss, 1)
        assert not loss.is_ready()  # kept for sync(), which reads it
        writer.add_scalar("loss", jnp.float32(1.5), 1)
        writer.add_image("loss", image, 1)  # not a number: written as is
    run = load_run(logdir)
    assert [(e.step, e.value) for e in run.Scalars("loss")] == [(1, 1.0)]
    assert len(run.Images("loss")) == 1
