"""Sink settings, one way on every face: ``(entry, {setting: value})`` in ``SummaryWriter(sinks=)``,
``SummaryRecord(sinks=)`` and ``sync(to=)``, ``-s NAME=VALUE`` on the command line; they reach
the sink typed in ``SinkOptions.settings``, and an unknown one is refused naming the sink. Also
what else a sink is told: its run's name (the same live, in ``read`` and under ``sync``), where
it writes, and that the writer calls no ``flush()`` on a timer."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tallyboard import SinkSpec, SummaryRecord, SummaryWriter, hookimpl, read
from tallyboard.cli import main as cli_main
from tallyboard.reading.sync import STATE_FILE, sync

pytest_plugins = ["tallyboard.testing"]


@dataclass(frozen=True)
class ProbeSettings:
    token: str = ""
    batch: int = 100
    deadline: float | None = None
    verbose: bool = False


class Probe:
    """A sink ``probe`` with settings; it keeps every ``SinkOptions`` it was opened with and the
    encoded scalars per run."""

    def __init__(self) -> None:
        self.opened: list[Any] = []
        self.sinks: list[Any] = []

    def _open(self, options: Any) -> Any:
        probe = self
        probe.opened.append(options)

        class Sink:
            def __init__(self) -> None:
                self.values: list[Any] = []
                self.flushes = 0
                self.closed = False
                probe.sinks.append(self)

            def write(self, data: Any) -> None:
                self.values.append(data)

            def flush(self) -> None:
                self.flushes += 1

            def close(self) -> None:
                self.closed = True

        return Sink()

    @hookimpl
    def register_sinks(self, register: Any) -> None:
        register(SinkSpec(name="probe", open=self._open, settings=ProbeSettings))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        register("scalar", "probe", lambda tag, step, wall_time, value: (tag, step, value))


@pytest.fixture
def probe(register_plugin: Any) -> Probe:
    plugin = Probe()
    register_plugin(plugin, "probe")
    return plugin


def _logdir(tmp_path: Path) -> Path:
    logdir = tmp_path / "runs"
    with SummaryWriter(logdir / "exp") as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_scalars("acc", {"train": 0.25}, 1)
    return logdir


def test_settings_reach_the_sink_typed_on_every_face(tmp_path: Path, probe: Probe) -> None:
    given = {"token": "s3cret", "batch": 5, "deadline": 2, "verbose": True}
    expected = ProbeSettings(token="s3cret", batch=5, deadline=2.0, verbose=True)
    with SummaryWriter(tmp_path / "w", sinks=[("probe", given)]) as w:
        w.add_scalar("x", 1.0, 0)
    with SummaryRecord(tmp_path / "r", sinks=[("probe", given)]) as record:
        record.add_value("scalar", "x", 1.0)
        record.record(0)
    logdir = _logdir(tmp_path)
    sync(logdir, ("probe", given))
    (logdir / STATE_FILE).unlink()
    argv = ["sync", str(logdir), "--to", "probe", "-s", "token=s3cret", "-s", "batch=5"]
    assert cli_main([*argv, "-s", "deadline=2", "--setting", "verbose=yes"]) == 0
    # SummaryWriter, SummaryRecord, then sync and the command line, each over two runs
    assert [o.settings for o in probe.opened] == [expected] * (2 + 2 * 2)
    assert type(probe.opened[-1].settings.deadline) is float  # "2" from the command line
    assert [s.values for s in probe.sinks[:2]] == [[("x", 0, 1.0)], [("x", 0, 1.0)]]


def test_no_settings_give_the_sinks_defaults_and_a_sink_without_settings_gets_none(
    tmp_path: Path, probe: Probe, memory_sink: Any
) -> None:
    with SummaryWriter(tmp_path, sinks=["probe", "memory"]) as w:
        w.add_scalar("x", 1.0, 0)
    assert probe.opened[0].settings == ProbeSettings()
    assert memory_sink.sinks[0].options.settings is None


def test_an_unknown_setting_is_refused_naming_the_sink_on_every_face(
    tmp_path: Path, probe: Probe, capsys: pytest.CaptureFixture[str]
) -> None:
    said = r"sink 'probe' has no setting 'tokn'; its settings: token, batch, deadline, verbose"
    entry = ("probe", {"tokn": "x"})
    with pytest.raises(ValueError, match=rf"sinks entry 'probe': {said}"):
        SummaryWriter(tmp_path / "w", sinks=["tfevents", entry])
    with pytest.raises(ValueError, match=said):
        SummaryRecord(tmp_path / "r", sinks=[entry])
    logdir = _logdir(tmp_path)
    with pytest.raises(ValueError, match=rf"to='probe': {said}"):
        sync(logdir, entry)
    assert cli_main(["sync", str(logdir), "--to", "probe", "-s", "tokn=x"]) == 2
    assert "sink 'probe' has no setting 'tokn'" in capsys.readouterr().err
    assert not (tmp_path / "w").exists() and probe.opened == []  # refused before anything
    assert not (logdir / STATE_FILE).exists()


def test_a_setting_of_the_wrong_type_is_refused_naming_sink_and_setting(
    tmp_path: Path, probe: Probe, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad, said in [
        ({"batch": "many"}, "setting 'batch' must be an int, got 'many'"),
        ({"batch": True}, "setting 'batch' must be an int, got True"),
        ({"verbose": "perhaps"}, "setting 'verbose' must be a bool"),
        ({"token": 3}, "setting 'token' must be a str, got int"),
        ({"deadline": "soon"}, "setting 'deadline' must be a number"),
        ({"batch": None}, "setting 'batch' must not be None"),
    ]:
        with pytest.raises(TypeError, match=f"sink 'probe' {said}"):
            SummaryWriter(tmp_path, sinks=[("probe", bad)])
    assert cli_main(["sync", str(tmp_path), "--to", "probe", "-s", "batch"]) == 2
    assert "--setting 'batch' must be NAME=VALUE" in capsys.readouterr().err


def test_a_sink_that_declares_no_settings_refuses_any(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sink 'csv' takes no settings, got delimiter"):
        SummaryWriter(tmp_path, sinks=[("csv", {"delimiter": ";"})])


def test_a_refused_value_of_a_network_setting_names_the_sink(tmp_path: Path) -> None:
    for bad in ({"deadline": 0}, {"deadline": "nan"}, {"max_pending": 0}, {"retry_secs": -1}):
        with pytest.raises(ValueError, match="sinks entry 'mlflow': sink 'mlflow': setting"):
            SummaryWriter(tmp_path, sinks=[("mlflow", bad)])


def test_malformed_entries_say_how_to_write_one(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="put the entry with settings in a list"):
        SummaryWriter(tmp_path, sinks=("csv", {}))  # type: ignore[arg-type]
    for bad in [("csv",), ("csv", "x"), ("", {}), ("csv", {1: 2})]:
        with pytest.raises(TypeError, match=r"an entry is \(sink name or URL, \{setting name"):
            SummaryWriter(tmp_path, sinks=[bad])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a non-empty str naming a sink"):
        SummaryWriter(tmp_path, sinks=[3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="is neither a sink name nor a sink URL: write"):
        SummaryWriter(tmp_path, sinks=["csv+/tmp/x"])  # '+' needs a URL after it
    assert not any(tmp_path.iterdir())


def test_summary_record_takes_what_summary_writer_takes(tmp_path: Path, probe: Probe) -> None:
    """URLs (sink+URL and scheme://path), settings, and the same errors as SummaryWriter."""
    import fsspec

    fs = fsspec.filesystem("memory")
    target = f"memory://record-{tmp_path.name}"
    with SummaryRecord(
        tmp_path / "r", sinks=[f"csv+{target}", ("probe", {"batch": 3})], tensorboard=True
    ) as record:
        record.add_value("scalar", "loss", 0.5)
        record.record(4)
    assert fs.cat_file(f"{target}/scalars.csv").decode().splitlines()[1].endswith(",loss,0.5")
    assert probe.opened[0].settings.batch == 3 and probe.sinks[0].values == [("loss", 4, 0.5)]
    assert read(str(tmp_path / "r"), formats="tfevents")["value"].tolist() == [0.5]
    for entry, error in [
        (
            "webhook+http://127.0.0.1:9/ingest",
            "sinks entry 'webhook+http://127.0.0.1:9/ingest': unknown sink 'webhook'",
        ),
        (("csv", {"x": 1}), "sink 'csv' takes no settings"),
    ]:
        with pytest.raises(ValueError, match=error.replace("+", r"\+")):
            SummaryRecord(tmp_path / "bad", sinks=[entry])
        with pytest.raises(ValueError, match=error.replace("+", r"\+")):
            SummaryWriter(tmp_path / "bad", sinks=[entry])


def test_settings_do_not_change_what_sync_remembers_as_sent(tmp_path: Path, probe: Probe) -> None:
    logdir = _logdir(tmp_path)
    assert sync(logdir, ("probe", {"batch": 1})).total == 2
    assert sync(logdir, ("probe", {"batch": 2})).total == 0  # the same target, its text
    assert list(json.loads((logdir / STATE_FILE).read_text())["targets"]) == ["probe"]


def test_a_run_has_one_name_live_in_read_and_under_sync(tmp_path: Path, probe: Probe) -> None:
    """The run's name is relative to the directory the user named: "." for that directory."""
    logdir = tmp_path / "exp"
    with SummaryWriter(logdir, sinks=["tfevents", "probe"]) as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_scalars("acc", {"train": 0.25, "val": 0.5}, 1)
    live = sorted(o.run for o in probe.opened)
    assert live == [".", "acc_train", "acc_val"]
    assert sorted(set(read(str(logdir))["run"])) == live
    probe.opened.clear()
    summary = sync(logdir, "probe")
    assert sorted(o.run for o in probe.opened) == live == summary.runs
    assert all(o.confirm and o.extra["confirm"] for o in probe.opened)
    # a parent directory: every name gains the run's folder, in read and sync alike
    probe.opened.clear()
    sync(tmp_path, "probe")
    assert sorted(o.run for o in probe.opened) == sorted(set(read(str(tmp_path))["run"]))
    assert sorted(o.run for o in probe.opened) == ["exp", "exp/acc_train", "exp/acc_val"]


def test_a_sink_given_a_url_is_told_the_url_as_given_and_each_run_s_place(
    tmp_path: Path, probe: Probe
) -> None:
    with SummaryWriter(tmp_path, sinks=["probe+http://127.0.0.1:9/hook"]) as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_scalars("acc", {"train": 0.25}, 1)
    by_run = {o.run: o for o in probe.opened}
    assert {run: o.location for run, o in by_run.items()} == {
        ".": "http://127.0.0.1:9/hook",
        "acc_train": "http://127.0.0.1:9/hook",
    }
    assert by_run["."].log_dir == "http://127.0.0.1:9/hook"
    assert by_run["acc_train"].log_dir == "http://127.0.0.1:9/hook/acc_train"
    assert by_run["acc_train"].extra["writer_log_dir"] == str(tmp_path / "acc_train")
    assert by_run["."].extra["sink"] == "probe+http://127.0.0.1:9/hook"


def test_a_rank_s_run_under_ranks_each_is_its_own_place_for_a_sink_given_a_url(
    tmp_path: Path, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}.items():
        monkeypatch.setenv(name, value)
    with SummaryWriter(tmp_path, ranks="each", sinks=["probe+memory://ranked"]) as w:
        w.add_scalar("loss", 0.5, 1)
    [options] = probe.opened
    assert (options.run, options.log_dir) == ("rank_1", "memory://ranked/rank_1")


def test_the_writer_calls_no_flush_on_a_timer_and_close_comes_without_flush(
    tmp_path: Path, probe: Probe
) -> None:
    """``flush_secs`` is the sink's to keep (options.flush_secs); the writer only passes it on."""
    w = SummaryWriter(tmp_path, sinks=["probe"], flush_secs=0.01)
    w.add_scalar("loss", 0.5, 1)
    time.sleep(0.2)  # twenty times flush_secs: a timer would have flushed by now
    [sink] = probe.sinks
    assert (sink.flushes, probe.opened[0].flush_secs) == (0, 0.01)
    w.close()
    assert sink.closed and sink.flushes == 0  # close() must store everything by itself
