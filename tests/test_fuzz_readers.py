"""The reader fuzzer (tests/fuzz_readers.py) with a fixed seed, within about 30 s: every reader
and the CLI commands that read, under hostile mutations of real files, in a worker process with
time and memory bounds. A longer run: ``python tests/fuzz_readers.py --seed 7 --cases 20000``."""

from __future__ import annotations

import json

from fuzz_readers import FORMATS, run

SEED, CASES, CUTS = 19, 80, 25


def test_every_reader_survives_a_fixed_seed_of_hostile_files() -> None:
    results = run(SEED, CASES, cli_every=10, cuts=CUTS, timeout=240)
    failed = [r for r in results if not r.get("ok")]
    assert not failed, "\n".join(
        json.dumps({k: v for k, v in r.items() if k != "traceback"}) + "\n" + r.get("traceback", "")
        for r in failed[:5]
    )
    assert len(results) >= CASES + 4 * CUTS  # every case ran (none lost to a dead worker)
    mutations = {(r["format"], r["mutation"].split("(")[0]) for r in results}
    for fmt in FORMATS:  # each format met several kinds of damage
        assert len({m for f, m in mutations if f == fmt}) >= 3, (fmt, mutations)
    for need in ("huge_length", "reframe", "special", "bomb", "deep_json", "long_line"):
        assert any(m == need for _, m in mutations), need
