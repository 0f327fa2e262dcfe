"""Interpreter exit: open Stats are closed before writers, handler errors never abort."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import load_run


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_open_stat_is_emitted_at_exit():
    proc = run_python(
        """
        from datetime import timedelta
        import tallyboard.monitor as m
        m.register_event_handler(lambda e: print("EVENT", sorted(e.data.items())))
        s = m.Stat("left", [m.SUM, m.COUNT], timedelta(days=3650))
        s.add(2)
        s.add(3)
        print("END OF SCRIPT")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "END OF SCRIPT",
        "EVENT [('left.count', 2.0), ('left.sum', 5.0)]",
    ]


def test_stats_close_before_writers_at_exit(logdir):
    proc = run_python(
        f"""
        from datetime import timedelta
        import tallyboard.monitor as m
        from tallyboard import SummaryWriter
        writer = SummaryWriter({str(logdir)!r})
        m.register_event_handler(m.TensorboardEventHandler(writer))
        s = m.Stat("loss", [m.MEAN], timedelta(days=3650))
        for v in (1.0, 2.0, 3.0):
            s.add(v)
        # neither the Stat nor the writer is closed
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert [(e.step, e.value) for e in load_run(logdir).Scalars("loss.mean")] == [(0, 2.0)]


def test_handler_error_at_exit_is_reported_not_fatal():
    proc = run_python(
        """
        from datetime import timedelta
        import tallyboard.monitor as m
        def bad(e):
            raise RuntimeError("boom at exit")
        seen = []
        m.register_event_handler(bad)
        m.register_event_handler(lambda e: print("SECOND HANDLER RAN"))
        s = m.Stat("x", [m.SUM], timedelta(days=3650))
        s.add(1)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "SECOND HANDLER RAN" in proc.stdout
    assert "Exception ignored" in proc.stderr and "boom at exit" in proc.stderr


def test_handler_error_during_gc_is_reported_not_fatal():
    proc = run_python(
        """
        import gc
        from datetime import timedelta
        import tallyboard.monitor as m
        def bad(e):
            raise RuntimeError("boom in gc")
        m.register_event_handler(bad)
        s = m.Stat("x", [m.SUM], timedelta(days=3650))
        s.add(1)
        del s
        gc.collect()
        print("STILL RUNNING")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "STILL RUNNING" in proc.stdout
    assert "Exception ignored" in proc.stderr and "boom in gc" in proc.stderr


def test_closed_and_collected_stats_are_not_kept_alive():
    proc = run_python(
        """
        import gc, weakref
        from datetime import timedelta
        import tallyboard.monitor as m
        s = m.Stat("x", [m.SUM], timedelta(days=3650))
        s.add(1)
        ref = weakref.ref(s)
        del s
        gc.collect()
        assert ref() is None
        from tallyboard.monitor import stat
        assert len(stat._live) == 0
        print("OK")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
