"""A sink's optional members (OptionalSink): found once when opened, used only when whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tallyboard import SinkSpec, SummaryWriter, hookimpl
from tallyboard.plugin.sinks import OptionalSink, SinkFastPath
from tallyboard.warn import SinkWarning

pytest_plugins = ["tallyboard.testing"]


def _encode(tag: str, step: int | None, wall_time: float, value: float) -> tuple[Any, ...]:
    return ("encoded", tag, step, value)


def _batch(rows: list[Any]) -> bytes:
    return b""


_encode.batch = _batch  # type: ignore[attr-defined]


class RowPlugin:
    """A sink ``rowsink`` whose ``write_row`` (and, if ``with_key``, ``row_key``) exist."""

    def __init__(self, with_key: bool = True, fail_rows_after: int | None = None) -> None:
        self.with_key, self.fail_rows_after = with_key, fail_rows_after
        self.written: list[Any] = []
        self.rows: list[tuple[Any, ...]] = []

    def _open(self, options: Any) -> Any:
        plugin = self

        class RowSink:
            def write(self, data: Any) -> None:
                plugin.written.append(data)

            def write_row(self, row: tuple[Any, ...]) -> None:
                after = plugin.fail_rows_after
                if after is not None and len(plugin.rows) >= after:
                    raise OSError(28, "No space left on device")
                plugin.rows.append(row)

            def flush(self) -> None:
                pass

            def close(self) -> None:
                pass

        if self.with_key:
            RowSink.row_key = lambda self, batch: ("key", batch)  # type: ignore[attr-defined]
        return RowSink()

    @hookimpl
    def register_sinks(self, register: Any) -> None:
        register(SinkSpec(name="rowsink", open=self._open))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        register("scalar", "rowsink", _encode)


def test_a_sink_with_write_row_and_row_key_gets_the_checked_values_as_rows(
    logdir: Path, register_plugin: Any
) -> None:
    plugin = RowPlugin()
    register_plugin(plugin, "rowsink")
    with SummaryWriter(logdir, sinks=["rowsink"]) as w:
        w.add_scalar("loss", 0.5, 3, walltime=10.0)
    assert plugin.rows == [(("key", _batch), "loss", 3, 10.0, 0.5)]
    assert plugin.written == []


def test_a_sink_with_write_row_but_no_row_key_gets_encoded_values_through_write(
    logdir: Path, register_plugin: Any
) -> None:
    plugin = RowPlugin(with_key=False)
    register_plugin(plugin, "rowsink")
    with SummaryWriter(logdir, sinks=["rowsink"]) as w:
        w.add_scalar("loss", 0.5, 3)
    assert plugin.rows == []
    assert plugin.written == [("encoded", "loss", 3, 0.5)]


def test_a_sink_failing_in_write_row_is_dropped_and_the_others_go_on(
    logdir: Path, register_plugin: Any, memory_sink: Any
) -> None:
    plugin = RowPlugin(fail_rows_after=1)
    register_plugin(plugin, "rowsink")
    w = SummaryWriter(logdir, sinks=["rowsink", "memory"])
    with pytest.warns(SinkWarning, match="sink 'rowsink' failed in write"):
        for step in range(3):
            w.add_scalar("loss", float(step), step)
    w.close()
    assert [row[2] for row in plugin.rows] == [0]
    assert [r.payload for r in memory_sink.records] == [0.0, 1.0, 2.0]


def test_the_fast_path_holds_only_the_members_a_sink_has() -> None:
    class OnlyAbandon:
        def abandon(self) -> None:
            pass

    sink = OnlyAbandon()
    fast = SinkFastPath.of(sink)
    assert fast.abandon == sink.abandon
    assert (fast.write_row, fast.row_key, fast.write_record, fast.write_value) == (None,) * 4


def test_every_optional_member_the_fast_path_looks_up_is_declared_in_the_protocol() -> None:
    declared = {name for name in vars(OptionalSink) if not name.startswith("_")}
    assert set(SinkFastPath.__dataclass_fields__) == declared
