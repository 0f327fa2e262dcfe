"""A fuzzer for every reader (tfevents, MindSpore, csv, jsonl, projector) and the CLI commands
that read (``ls``, ``export``, ``convert``).

Each case mutates real files that tallyboard's writers wrote (bit flips, cuts, record headers
claiming huge lengths, payloads mutated and framed again, deep nesting, overlong lines, stray
quotes, decompression bombs, FIFOs, symlinks and loops), reads the mutated log dir and checks:

- it raises nothing: damage is a :class:`~tallyboard.plugin.readers.ReadWarning` naming the file
  and the offset, and the CLI answers with an exit code;
- every intact record is returned: for bit flips, cuts and huge lengths an independent walk of
  the framing (CRCs from the ``crc32c`` package, payloads parsed with TensorBoard's protos or the
  test suite's own MindSpore protos) says exactly which scalars must come back, and the offset
  of every record skipped must be named in a warning; for line formats every row of a line the
  mutation did not touch must come back, and a touched row that gives nothing must be reported
  at its offset; for other mutations, every record or line left alone must come back;
- it never hangs (each case under ``signal.alarm``; the parent kills a worker that stops
  answering) and stays in a memory bound proportional to the chunk size (``tracemalloc`` peak
  per case, and an address-space limit on the worker for memory no tracer sees, such as Pillow's).

Cases run in a worker process with those limits. ``python tests/fuzz_readers.py --seed 7
--cases 20000`` is a long run; ``tests/test_fuzz_readers.py`` runs a fixed seed in CI.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from hostile_files import (  # noqa: E402
    frame,
    header,
    image_event,
    masked_crc,
    png_bomb,
    records,
    scalar_event,
    write_runs,
)

FORMATS = ("tfevents", "mindspore", "csv", "jsonl", "projector")
#: seconds one case may take (the reads are of files of a few kilobytes).
CASE_SECONDS = 20
#: bytes read at a time by the readers under test, and the longest record they read whole: small,
#: so records straddle chunks and the memory bound is tight.
CHUNKS = (61, 512, 4096)
MAX_UNIT = 1 << 20
#: address space the worker may add after its imports: what no tracer sees (Pillow's pixels).
HEADROOM = 768 << 20


class Failure(AssertionError):
    """A property did not hold."""


# ---------------------------------------------------------------------------------------------
# what must come back


def tfevents_scalars(payload: bytes) -> list[tuple[str, int, float]] | None:
    """The scalars of one event payload as the reader returns them; None if it does not parse."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.util import tensor_util

    try:
        event = Event.FromString(payload)
    except Exception:
        return None
    out = []
    for v in event.summary.value:
        plugin = v.metadata.plugin_data.plugin_name
        if not any(v.HasField(f) for f in ("image", "histo", "audio", "tensor")):
            if plugin in ("", "scalars"):
                out.append((v.tag, int(event.step), float(v.simple_value)))
        elif v.HasField("tensor") and plugin == "scalars":
            out.append((v.tag, int(event.step), float(tensor_util.make_ndarray(v.tensor))))
    return out


def mindspore_scalars(payload: bytes) -> list[tuple[str, int, float]] | None:
    from mindspore_reader import Event

    try:
        event = Event.FromString(payload)
    except Exception:
        return None
    return [
        (v.tag, int(event.step), float(v.scalar_value))
        for v in event.summary.value
        if v.HasField("scalar_value")
    ]


SCALARS_OF = {"tfevents": tfevents_scalars, "mindspore": mindspore_scalars}


def framed_oracle(data: bytes, fmt: str) -> tuple[list[tuple[str, int, float]], list[int], bool]:
    """Walking the framing of ``data`` as the readers promise to: the scalars that must come
    back, the offsets that must be reported, and whether a payload that does not parse was met
    (whose reporting is the reader's own)."""
    out: list[tuple[str, int, float]] = []
    reported: list[int] = []
    unparsable = False
    pos, n = 0, len(data)
    while pos + 12 <= n:
        (length,) = struct.unpack_from("<Q", data, pos)
        if struct.unpack_from("<I", data, pos + 8)[0] != masked_crc(data[pos : pos + 8]):
            reported.append(pos)  # bad length CRC: the rest is skipped
            break
        if length + 16 > MAX_UNIT:
            reported.append(pos)  # more than a record may hold: the rest is skipped
            break
        if pos + 16 + length > n:
            break  # a torn tail: waits for the writer, nothing to report yet
        payload = data[pos + 12 : pos + 12 + length]
        if struct.unpack_from("<I", data, pos + 12 + length)[0] != masked_crc(payload):
            reported.append(pos)
        else:
            got = SCALARS_OF[fmt](payload)
            if got is None:
                unparsable = True
            else:
                out.extend(got)
        pos += 16 + length
    return out, reported, unparsable


def line_rows(fmt: str, data: bytes) -> list[tuple[int, int, Any]]:
    """``(start, end, scalar or None)`` of every line (end: past its newline)."""
    out = []
    pos = 0
    for line in data.split(b"\n")[:-1]:
        end = pos + len(line) + 1
        scalar = None
        if fmt == "csv" and pos > 0:
            import csv as _csv

            (row,) = list(_csv.reader(io.StringIO(line.decode())))
            scalar = (row[2], int(row[1] or 0), float(row[3]))
        elif fmt == "jsonl":
            rec = json.loads(line)
            if rec["kind"] == "scalar":
                scalar = (rec["tag"], int(rec["step"] or 0), float(rec["value"]))
        out.append((pos, end, scalar))
        pos = end
    return out


# ---------------------------------------------------------------------------------------------
# mutations: each takes the case's run directory, its file and a Random, returns a description
# and the kind of oracle that applies: "exact" (framing walk), "flip" or "cut" at a byte (line
# formats), "kept" (the records or lines listed must come back) or "none" (only no crash).


class Mutation:
    def __init__(self, name: str, oracle: str, detail: Any = None) -> None:
        self.name, self.oracle, self.detail = name, oracle, detail

    def __repr__(self) -> str:
        return f"{self.name}({self.detail!r})"


def m_flip(path: Path, rnd: random.Random) -> Mutation:
    data = bytearray(path.read_bytes())
    k = rnd.randrange(len(data))
    data[k] ^= 1 << rnd.randrange(8)
    path.write_bytes(bytes(data))
    return Mutation("flip", "flip", k)


def m_cut(path: Path, rnd: random.Random, at: int | None = None) -> Mutation:
    data = path.read_bytes()
    k = rnd.randrange(len(data)) if at is None else at
    path.write_bytes(data[:k])
    return Mutation("cut", "cut", k)


def m_huge_length(path: Path, rnd: random.Random) -> Mutation:
    """A record header claiming a huge length, with a valid length CRC, over a record's."""
    data = bytearray(path.read_bytes())
    pos, _ = rnd.choice(records(bytes(data)))
    length = rnd.choice(
        [1 << 62, (1 << 64) - 1, 1 << 31, MAX_UNIT, rnd.randrange(1 << 20, 1 << 40)]
    )
    data[pos : pos + 12] = header(length)
    path.write_bytes(bytes(data))
    return Mutation("huge_length", "exact", (pos, length))


def m_huge_tail(path: Path, rnd: random.Random) -> Mutation:
    """A header claiming more than the file holds (but less than a record may): a torn tail."""
    with open(path, "ab") as f:
        f.write(header(rnd.randrange(1 << 16, MAX_UNIT - 16)) + os.urandom(rnd.randrange(64)))
    return Mutation("huge_tail", "exact")


def m_reframe(path: Path, rnd: random.Random) -> Mutation:
    """One record's payload mutated (flips, cuts, inserted bytes, deep nesting), framed again
    with good CRCs: the parsers behind the framing get garbage."""
    data = path.read_bytes()
    recs = records(data)
    i = rnd.randrange(len(recs))
    pos, length = recs[i]
    payload = bytearray(data[pos + 12 : pos + 12 + length])
    how = rnd.choice(["flips", "cut", "insert", "nest", "random", "varint"])
    if how == "flips" and payload:
        for _ in range(rnd.randint(1, 8)):
            payload[rnd.randrange(len(payload))] ^= 1 << rnd.randrange(8)
    elif how == "cut":
        del payload[rnd.randrange(len(payload) + 1) :]
    elif how == "insert":
        k = rnd.randrange(len(payload) + 1)
        payload[k:k] = os.urandom(rnd.randint(1, 16))
    elif how == "nest":  # field 5 (summary) nested many times, as length-delimited messages
        inner = b""
        for _ in range(rnd.choice([100, 3000])):
            inner = b"\x2a" + _varint(len(inner)) + inner
        payload = bytearray(inner)
    elif how == "varint":  # an overlong varint
        payload = bytearray(b"\x10" + b"\xff" * rnd.randint(10, 40) + b"\x01")
    else:
        payload = bytearray(os.urandom(rnd.randrange(64)))
    new = data[:pos] + frame(bytes(payload)) + data[pos + 16 + length :]
    path.write_bytes(new)
    return Mutation("reframe", "kept", (i, how))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def m_bomb(path: Path, rnd: random.Random) -> Mutation:
    """An image record whose PNG inflates to hundreds of megabytes (read, then converted)."""
    side = rnd.choice([6000, 10000])
    with open(path, "ab") as f:
        f.write(frame(image_event("bomb", 99, png_bomb(side, side), side, side)))
        f.write(frame(scalar_event("after", 100, 1.0)))
    return Mutation("bomb", "none", side)


def m_long_line(path: Path, rnd: random.Random) -> Mutation:
    """A line longer than a line may be, among the others or as a last line with no end."""
    lines = path.read_bytes().split(b"\n")[:-1]
    k = rnd.randrange(1, len(lines) + 1)
    filler = rnd.choice([b"1", b"[", b'"', b"a,"]) * rnd.randrange(MAX_UNIT, 3 * MAX_UNIT)
    ended = rnd.random() < 0.7
    if ended:
        data = b"".join(x + b"\n" for x in lines[:k] + [filler] + lines[k:])
    else:
        data = b"".join(x + b"\n" for x in lines[:k]) + filler
    path.write_bytes(data)
    return Mutation("long_line", "kept", (k, ended))


def m_deep_json(path: Path, rnd: random.Random) -> Mutation:
    opener = rnd.choice([b"[", b'{"a":', b'{"wall_time":1,"step":1,"tag":"t","kind":"x","value":['])
    depth = rnd.choice([1000, 100_000])
    with open(path, "ab") as f:
        f.write(opener * depth + b"\n")
        f.write(b'{"wall_time":1.0,"step":7,"tag":"after","kind":"scalar","value":2.0}\n')
    return Mutation("deep_json", "kept", (opener[:8], depth))


def m_stray_quote(path: Path, rnd: random.Random) -> Mutation:
    data = bytearray(path.read_bytes())
    start = data.index(b"\n") + 1
    k = rnd.randrange(start, len(data) - 1)
    data[k : k + 1] = b'"' if rnd.random() < 0.5 else data[k : k + 1] + b'"'
    path.write_bytes(bytes(data))
    return Mutation("stray_quote", "flip", k)


def m_special(path: Path, rnd: random.Random) -> Mutation:
    """A FIFO, a folder symlink or a dangling link named like the format's file (in a folder
    of its own), a link loop, or the run folder linked under another name."""
    how = rnd.choice(["fifo", "dirlink", "dangling", "loop", "runlink"])
    sub = path.parent / "sub"
    sub.mkdir()
    target = sub / path.name
    if how == "fifo":
        os.mkfifo(target)
    elif how == "dirlink":
        (path.parent / "somedir").mkdir()
        os.symlink(path.parent / "somedir", target)
    elif how == "dangling":
        os.symlink(path.parent / "nowhere", target)
    elif how == "loop":
        os.symlink(path.parent, sub / "loop")
        os.symlink(path.parent.parent, path.parent / "up")
    else:
        os.symlink(path.parent, path.parent.parent / "linked")
    return Mutation("special", "special", how)


def m_side_file(path: Path, rnd: random.Random) -> Mutation:
    """A side file (jsonl blob; projector tensors, metadata, sprite) replaced by a FIFO, a folder
    or garbage, or cut."""
    side = sorted(p for p in path.parent.rglob("*") if p.is_file() and p != path)
    side = [p for p in side if "tfevents" not in p.name]
    victim = rnd.choice(side)
    how = rnd.choice(["fifo", "dir", "garbage", "cut", "huge"])
    victim.unlink()
    if how == "fifo":
        os.mkfifo(victim)
    elif how == "dir":
        victim.mkdir()
    elif how == "garbage":
        victim.write_bytes(os.urandom(rnd.randrange(1, 256)))
    elif how == "cut":
        victim.write_bytes(b"")
    else:
        victim.write_bytes(b"1\t" * rnd.randrange(1, 5000) + b"\n")
    return Mutation("side_file", "none", (victim.name, how))


def m_config(path: Path, rnd: random.Random) -> Mutation:
    how = rnd.choice(["flip", "cut", "nest", "bad_step", "outside"])
    text = path.read_bytes()
    if how == "flip":
        return m_flip(path, rnd)
    if how == "cut":
        return m_cut(path, rnd)
    if how == "nest":
        path.write_bytes(b"embeddings { sprite { " * rnd.choice([10, 5000]) + b"\n")
    elif how == "bad_step":  # a step of digits Python's isdigit takes but int() does not
        path.write_bytes(re.sub(rb':\d+"', ':\u00b2"'.encode(), text))
    else:
        path.write_bytes(text.replace(b'tensor_path: "', b'tensor_path: "../../'))
    return Mutation("config", "none", how)


MUTATIONS: dict[str, list[tuple[Callable[[Path, random.Random], Mutation], int]]] = {
    "tfevents": [
        (m_flip, 6),
        (m_cut, 4),
        (m_huge_length, 3),
        (m_huge_tail, 1),
        (m_reframe, 6),
        (m_special, 2),
        (m_bomb, 1),
    ],
    "mindspore": [
        (m_flip, 6),
        (m_cut, 4),
        (m_huge_length, 3),
        (m_huge_tail, 1),
        (m_reframe, 6),
        (m_special, 2),
    ],
    "csv": [(m_flip, 8), (m_cut, 4), (m_long_line, 2), (m_stray_quote, 4), (m_special, 2)],
    "jsonl": [
        (m_flip, 8),
        (m_cut, 4),
        (m_long_line, 2),
        (m_deep_json, 3),
        (m_special, 2),
        (m_side_file, 2),
    ],
    "projector": [(m_config, 6), (m_side_file, 6), (m_special, 2)],
}


# ---------------------------------------------------------------------------------------------
# running a case


def read_dir(logdir: Path, fmt: str) -> tuple[list[tuple[str, int, float]], int, list[str]]:
    """Scalars, other rows and warnings from reading ``logdir`` twice (the second read must
    add nothing: no record is returned twice)."""
    from tallyboard.reading.runs import RunReader

    scalars: list[tuple[str, int, float]] = []
    rows = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = RunReader(str(logdir), formats=[fmt])
        for attempt in range(2):
            for _, batch in reader.read():
                tags, steps, _, values = batch.scalars()
                got = list(zip(tags.tolist(), steps.tolist(), values.tolist()))
                more = sum(len(r) for r in batch.rows.values())
                if attempt and (got or more):
                    raise Failure(f"a second read returned {len(got)} scalars, {more} rows again")
                scalars.extend(got)
                rows += more
    from tallyboard.plugin.readers import ReadWarning

    bad = [w for w in caught if not issubclass(w.category, (ReadWarning, ResourceWarning))]
    if bad:
        raise Failure(f"unexpected warning {bad[0].category.__name__}: {bad[0].message}")
    return scalars, rows, [str(w.message) for w in caught if issubclass(w.category, ReadWarning)]


def run_cli(logdir: Path, work: Path, fmt: str) -> None:
    """``ls``, ``export`` and ``convert`` on the damaged log dir: an exit code, never a crash."""
    from tallyboard.cli import read as cli

    out = io.StringIO()
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        warnings.simplefilter("ignore")
        calls: list[Callable[[], int]] = [
            lambda: cli.cmd_ls(str(logdir), True, [fmt]),
            lambda: cli.cmd_export(
                str(logdir), str(work / "x.csv"), None, None, None, True, formats=[fmt]
            ),
            lambda: cli.cmd_convert(str(logdir), str(work / "conv"), "tfevents", True, [fmt]),
        ]
        if fmt != "mindspore":
            calls.append(
                lambda: cli.cmd_convert(str(logdir), str(work / "conv2"), "mindspore", True, [fmt])
            )
        for call in calls:
            try:
                rc = call()
            except cli.CliError:
                continue
            if rc not in (0, 1):
                raise Failure(f"exit code {rc}")


def check(
    fmt: str,
    m: Mutation,
    before: bytes,
    after: bytes,
    path: Path,
    got: list[tuple[str, int, float]],
    rows: int,
    messages: list[str],
    base: dict[str, Any],
) -> None:
    for msg in messages:
        if "/" not in msg.split(":")[0] or ("offset" not in msg and "not a regular" not in msg):
            raise Failure(f"a warning names no file and offset: {msg}")
    want_all = base["scalars"]
    if m.oracle == "special":
        times = 2 if m.detail == "runlink" else 1  # the linked run is a run of its own
        if sorted(got) != sorted(want_all * times) or len(got) + rows != base["units"] * times:
            raise Failure(f"{len(got)} scalars, {rows} rows instead of {times} x {base['units']}")
        if m.detail == "fifo" and not any("not a regular file" in msg for msg in messages):
            raise Failure("a FIFO named like a log file is not reported")
        return
    if fmt in SCALARS_OF and m.oracle in ("exact", "flip", "cut"):
        want, reported, unparsable = framed_oracle(after, fmt)
        if unparsable:
            _contains(got, want)
        elif got != want:
            raise Failure(
                f"scalars differ: got {len(got)}, want {len(want)}: {_first_difference(got, want)}"
            )
        for offset in reported:
            if not any(str(path) in msg and f"offset {offset}" in msg for msg in messages):
                raise Failure(f"damage at offset {offset} not reported: {messages}")
        return
    if fmt in SCALARS_OF and m.oracle == "kept":
        i, _ = m.detail
        recs = records(before)
        keep = [j for j in range(len(recs)) if j != i]
        want = []
        for j in keep:
            pos, length = recs[j]
            want.extend(SCALARS_OF[fmt](before[pos + 12 : pos + 12 + length]) or [])
        _contains(got, want)
        return
    if fmt in ("csv", "jsonl") and m.oracle in ("flip", "cut"):
        lines = base["lines"]
        k = m.detail
        if m.oracle == "cut":
            want = [s for start, end, s in lines if end <= k and s is not None]
            if got != want:
                raise Failure(f"cut at {k}: {_first_difference(got, want)}")
            return
        if fmt == "csv" and k < lines[0][1]:
            if got:
                raise Failure("a csv whose header is damaged was read")
            if not any("offset 0" in msg for msg in messages):
                raise Failure("a damaged csv header is not reported")
            return
        (hit,) = [i for i, (start, end, _) in enumerate(lines) if start <= k < end]
        touched = {hit}
        if k == lines[hit][1] - 1 and hit + 1 < len(lines):
            touched.add(hit + 1)  # the newline ending the line: it joins the next
        want = [s for i, (_, _, s) in enumerate(lines) if i not in touched and s is not None]
        _contains(got, want)
        extra = collections.Counter(got) - collections.Counter(want_all)
        if sum(extra.values()) > 2:
            raise Failure(f"rows that were never written: {list(extra)[:3]}")
        gave_nothing = len(got) + rows <= base["units"] - len(touched)
        start = lines[hit][0]
        reported = any(str(path) in msg and f"offset {start}" in msg for msg in messages)
        if gave_nothing and max(touched) < len(lines) - 1 and not reported:  # (last: torn)
            raise Failure(f"the line at offset {start} gave nothing and was not reported")
        return
    if m.oracle == "kept" and fmt in ("csv", "jsonl"):
        if m.name == "long_line" and not m.detail[1]:
            k = m.detail[0]
            _contains(got, [s for _, _, s in base["lines"][:k] if s is not None])
        else:
            _contains(got, want_all)
        if m.name == "deep_json" and ("after", 7, 2.0) not in got:
            raise Failure("the line after a deep one is lost")
        return


def _contains(got: list[Any], want: list[Any]) -> None:
    missing = collections.Counter(want) - collections.Counter(got)
    if missing:
        raise Failure(f"intact records not returned: {list(missing.items())[:3]}")


def _first_difference(got: list[Any], want: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f"#{i}: got {a}, want {b}"
    return f"lengths {len(got)} vs {len(want)}"


def cases(
    seed: int, count: int, sizes: dict[str, int], cuts: int
) -> Iterator[tuple[int, str, str, int, int | None]]:
    """``(number, format, mutation name, case seed, cut)``: ``count`` cases (each format with
    each of its mutations first, then the formats in turn and mutations weighted), then ``cuts`` cuts evenly spread over each framed or line
    file (0: a cut at every byte)."""
    rnd = random.Random(seed)
    every = [(fmt, fn) for fmt in FORMATS for fn, _ in MUTATIONS[fmt]]  # each pair once first
    for i in range(count):
        if i < len(every):
            fmt, fn = every[i]
        else:
            fmt = FORMATS[i % len(FORMATS)]
            fns, weights = zip(*MUTATIONS[fmt])
            fn = rnd.choices(fns, weights)[0]
        yield i, fmt, fn.__name__, rnd.randrange(1 << 30), None
    number = count
    for fmt in ("tfevents", "mindspore", "csv", "jsonl"):
        stride = max(1, sizes[fmt] // cuts) if cuts else 1
        for at in range(rnd.randrange(stride), sizes[fmt], stride):
            yield number, fmt, "m_cut", rnd.randrange(1 << 30), at
            number += 1


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"a case ran past {CASE_SECONDS} s")


def worker(
    seed: int, count: int, workdir: Path, cli_every: int, only: str | None, cuts: int
) -> int:
    """Run the cases, one JSON line each on stdout; returns the number of failures."""
    from tallyboard.cli import read as _cli  # noqa: F401
    from tallyboard.plugin.readers import ChunkedFileReader
    from tallyboard.reading.runs import RunReader  # noqa: F401  (imports done before limits)

    runs = workdir / "base"
    files = write_runs(runs)
    base: dict[str, dict[str, Any]] = {}
    for fmt in FORMATS:
        scalars, rows, messages = read_dir(runs / files[fmt].parent.name, fmt)
        if messages:
            raise Failure(f"the undamaged {fmt} files warn: {messages}")
        data = files[fmt].read_bytes()
        base[fmt] = {"scalars": scalars, "units": len(scalars) + rows, "size": len(data)}
        if fmt in ("csv", "jsonl"):
            base[fmt]["lines"] = line_rows(fmt, data)
        if fmt in SCALARS_OF and framed_oracle(data, fmt)[0] != scalars:
            raise Failure(f"the oracle disagrees on the undamaged {fmt} file")
    classes = {c for c in _subclasses(ChunkedFileReader)}
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + HEADROOM, hard))
    signal.signal(signal.SIGALRM, _alarm)
    failures = 0
    by_name = {fn.__name__: fn for fns in MUTATIONS.values() for fn, _ in fns}
    sizes = {fmt: base[fmt]["size"] for fmt in FORMATS}
    for number, fmt, name, case_seed, at in cases(seed, count, sizes, cuts):
        if only and name != only and fmt != only:
            continue
        rnd = random.Random(case_seed)
        chunk = rnd.choice(CHUNKS)
        for cls in classes:
            cls.chunk_size = chunk
            if getattr(cls, "max_unit", MAX_UNIT + 1) > MAX_UNIT:
                cls.max_unit = MAX_UNIT
        case = workdir / f"case{number}"
        src = files[fmt]
        shutil.copytree(src.parent, case / src.parent.name, symlinks=True)
        path = case / src.relative_to(runs)
        m = m_cut(path, rnd, at) if at is not None else by_name[name](path, rnd)
        after = path.read_bytes() if path.is_file() else b""
        logdir = case / src.parent.name if m.detail != "runlink" else case
        record: dict[str, Any] = {
            "case": number,
            "format": fmt,
            "mutation": repr(m),
            "chunk": chunk,
            "seed": case_seed,
        }
        print(json.dumps({"start": number}), flush=True)
        started = time.perf_counter()
        tracemalloc.start()
        signal.alarm(CASE_SECONDS)
        try:
            got, rows, messages = read_dir(logdir, fmt)
            peak = tracemalloc.get_traced_memory()[1]
            bound = 8 * (chunk + MAX_UNIT) + 64 * base[fmt]["size"] + (2 << 20)
            if fmt == "projector":
                bound += 64 * max(
                    (p.stat().st_size for p in case.rglob("*.tsv") if p.is_file()), default=0
                )
            record["peak"] = peak
            if peak > bound:
                raise Failure(f"read peaked at {peak} bytes, over the bound {bound}")
            check(fmt, m, src.read_bytes(), after, path, got, rows, messages, base[fmt])
            if number % cli_every == 0 or name in ("m_bomb", "m_special"):
                run_cli(logdir, case, fmt)
            record["ok"] = True
        except Exception as exc:  # a property that failed, or a crash
            failures += 1
            record["ok"] = False
            record["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            record["traceback"] = traceback.format_exc()[-3000:]
        finally:
            signal.alarm(0)
            tracemalloc.stop()
            record["seconds"] = round(time.perf_counter() - started, 3)
            print(json.dumps(record), flush=True)
            shutil.rmtree(case, ignore_errors=True)
    return failures


def _subclasses(cls: type) -> Iterator[type]:
    import tallyboard_csv.reader  # noqa: F401
    import tallyboard_jsonl.reader  # noqa: F401
    import tallyboard_mindspore.reader  # noqa: F401
    import tallyboard_tfevents.reader  # noqa: F401

    todo = [cls]
    while todo:
        c = todo.pop()
        yield c
        todo.extend(c.__subclasses__())


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run(
    seed: int,
    count: int,
    cli_every: int = 10,
    only: str | None = None,
    timeout: float = 3600,
    cuts: int = 0,
) -> list[dict[str, Any]]:
    """Run ``count`` cases in a worker process; every case's record (failures have ``ok``
    False). A worker that stops answering for a case's time is killed and its case failed."""
    with tempfile.TemporaryDirectory(prefix="tallyboard-fuzz-") as tmp:
        env = {
            **os.environ,
            "MALLOC_ARENA_MAX": "2",
            "PYTHONWARNINGS": "ignore::DeprecationWarning",
        }
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--seed",
            str(seed),
            "--cases",
            str(count),
            "--dir",
            tmp,
            "--cli-every",
            str(cli_every),
            "--cuts",
            str(cuts),
        ] + (["--only", only] if only else [])
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        out: list[dict[str, Any]] = []
        current: int | None = None
        deadline = time.monotonic() + timeout
        import selectors

        sel = selectors.DefaultSelector()
        assert proc.stdout is not None
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                left = min(CASE_SECONDS * 3, deadline - time.monotonic())
                if left <= 0 or not sel.select(left):
                    out.append({"case": current, "ok": False, "error": "hang: worker killed"})
                    break
                line = proc.stdout.readline()
                if not line:
                    break
                rec = json.loads(line)
                if "start" in rec:
                    current = rec["start"]
                else:
                    out.append(rec)
                    current = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            err = proc.stderr.read() if proc.stderr else ""
            sel.close()
        died = proc.returncode not in (0, 1, -signal.SIGKILL) or current is not None
        if died or (proc.returncode and all(r.get("ok") for r in out)):
            out.append(
                {
                    "case": current,
                    "ok": False,
                    "error": f"worker died (exit {proc.returncode}): {err[-2000:]}",
                }
            )
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--cli-every", type=int, default=10, help="run ls/export/convert every N cases")
    p.add_argument("--only", help="one format or mutation (m_flip, ...)")
    p.add_argument(
        "--cuts", type=int, default=0, help="then N cuts spread over each file (0: at every byte)"
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        failed = worker(args.seed, args.cases, Path(args.dir), args.cli_every, args.only, args.cuts)
        return 1 if failed else 0
    started = time.perf_counter()
    results = run(args.seed, args.cases, args.cli_every, args.only, cuts=args.cuts)
    bad = [r for r in results if not r.get("ok")]
    for r in bad:
        print(json.dumps({k: v for k, v in r.items() if k != "traceback"}))
        print(r.get("traceback", ""))
    summarize(results, time.perf_counter() - started)
    return 1 if bad else 0


def summarize(results: list[dict[str, Any]], seconds: float) -> None:
    import statistics

    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        by[f"{r.get('format')} {str(r.get('mutation', '?')).split('(')[0]}"].append(r)
    print(
        f"{len(results)} cases in {seconds:.1f} s, {sum(not r.get('ok') for r in results)} failed"
    )
    for key in sorted(by):
        rs = by[key]
        secs = sorted(r.get("seconds", 0) for r in rs)
        peaks = [r.get("peak", 0) for r in rs]
        print(
            f"  {key:24} {len(rs):6} cases  failed {sum(not r.get('ok') for r in rs):3}  "
            f"time median {statistics.median(secs) * 1000:7.1f} ms max {secs[-1] * 1000:8.1f} ms"
            f"  peak max {max(peaks) / 2**20:6.2f} MiB"
        )


if __name__ == "__main__":
    sys.exit(main())
