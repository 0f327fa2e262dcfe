"""``tallyboard board LOGDIR --port 0``, as ``serve --port 0``: a free port, named in the URL
that board prints, where TensorBoard then shows the runs."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tallyboard import SummaryWriter
from tb_server import TensorBoard, stop_process_group


def test_board_port_0_takes_a_free_port_and_prints_it(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "runs" / "a") as w:
        w.add_scalar("loss", 0.5, 1)
    log = tmp_path / "board.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tallyboard", "board", str(tmp_path / "runs"), "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        found = None
        while found is None and proc.poll() is None and time.monotonic() < deadline:
            found = re.search(r"TensorBoard at http://localhost:(\d+)/", log.read_text())
            time.sleep(0.2)
        assert found is not None, log.read_text()[-3000:]
        port = int(found.group(1))
        assert port != 0
        assert TensorBoard(port).get_json("/data/runs") == ["a"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            stop_process_group(proc, 10)
