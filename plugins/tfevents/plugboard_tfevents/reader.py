"""Reading TensorBoard event files back, from any writer (torch, tensorboardX, TF, plugboard).

Files are read in chunks of :data:`CHUNK` bytes, so memory holds one chunk, not the file.
Scalars take a fast path: records are scanned in one loop, CRCs checked with the C CRC-32C,
and the common scalar ``Event`` (wall_time, step, one ``simple_value``) is decoded by hand. A run
of such records of one length (as a writer emits them: same header, same field layout) is
decoded at once with numpy into the batch's ``columns``. Every other record is parsed with protobuf and each ``Summary.Value`` handed to the
decoders kinds registered for ``"tfevents"``: ``decode(value, step, wall_time)`` returns a row
(a dict; a ``"value"`` float for scalars) or None when the value is not of that kind.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from plugboard.framing import crc32c, mask
from plugboard.readers import Batch, warn_corrupt

FORMAT = "tfevents"
_unpack_q = struct.Struct("<Q").unpack_from
_unpack_i = struct.Struct("<I").unpack_from
_unpack_d = struct.Struct("<d").unpack_from
_unpack_f = struct.Struct("<f").unpack_from
#: bytes read per chunk; a record longer than this is read whole.
CHUNK = 4 << 20
#: most records decoded by one numpy pass; a bulk run shorter than _MIN_RUN pauses bulk tries.
_MAX_RUN, _MIN_RUN = 65536, 16
#: Summary.Value payload fields besides simple_value (a proto3 float without presence).
_MESSAGE_PAYLOADS = ("image", "histo", "audio", "tensor")


def matches(basename: str) -> bool:
    """TensorBoard reads files whose name contains ``tfevents``."""
    return "tfevents" in basename


class EventFileReader:
    """One event file; :meth:`read_new` returns records appended since the previous call."""

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        self.fs, self.path, self.decoders = fs, path, decoders
        self.offset = 0
        self.dead = False
        self._kind_of_tag: dict[str, str] = {}
        self._good_heads: set[bytes] = set()

    def read_new(self) -> Batch:
        batch = Batch()
        if self.dead:
            return batch
        with self.fs.open(self.path, "rb") as f:
            f.seek(self.offset)
            rest = b""
            while not self.dead:
                data = f.read(CHUNK)
                if not data:
                    break
                if rest:
                    data = rest + data
                used = self._scan(data, batch)
                self.offset += used
                rest = data[used:]
                del data  # one chunk in memory at a time
        return batch

    def _bulk(
        self, data: bytes, pos: int, end: int, first: bytes, layout: tuple[int, ...], batch: Batch
    ) -> int:
        """Decode the run of records at ``pos`` laid out like ``first``; returns the bytes used.

        ``first`` is a whole record (header, payload, data CRC) already decoded by the loop and
        ``layout`` its payload offsets: step varint start and length, tag start and end. Records
        of the run share ``first``'s header and every byte but wall_time, step, tag and value;
        the run stops at the first record that differs or fails its data CRC.
        """
        import numpy as np

        s = len(first)
        k = min((end - pos) // s, _MAX_RUN)
        if k < _MIN_RUN:
            return 0
        m = np.frombuffer(data, np.uint8, k * s, pos).reshape(k, s)
        q0, klen, t0, t1 = layout
        varying = np.zeros(s, bool)
        varying[13:21] = True  # wall_time
        varying[12 + q0 : 12 + q0 + klen] = True
        varying[12 + t0 : 12 + t1] = True
        varying[13 + t1 : 17 + t1] = True  # value
        varying[s - 4 :] = True  # data CRC
        fixed = ~varying
        same = (m[:, fixed] == np.frombuffer(first, np.uint8)[fixed]).all(axis=1)
        if klen > 1:
            same &= (m[:, 12 + q0 : 12 + q0 + klen - 1] >= 0x80).all(axis=1)
        if klen:
            same &= m[:, 12 + q0 + klen - 1] < 0x80
        if not same.all():
            k = int(np.argmin(same))
        if k < _MIN_RUN:
            return 0
        m = m[:k]
        n = s - 16
        crc, mv = crc32c, memoryview(data)
        c = np.fromiter(
            (crc(mv[i : i + n]) for i in range(pos + 12, pos + 12 + k * s, s)),  # type: ignore[arg-type]
            np.uint64,
            k,
        )
        masked = (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        ok = masked == m[:, s - 4 :].copy().view("<u4").ravel()
        if not ok.all():
            k = int(np.argmin(ok))  # the bad record goes to the loop, which reports it
            if k == 0:
                return 0
            m = m[:k]
        step = np.zeros(k, np.uint64)
        for i in range(klen):
            step |= (m[:, 12 + q0 + i] & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        raw = np.ascontiguousarray(m[:, 12 + t0 : 12 + t1]).view(f"V{t1 - t0}").ravel()
        uniq, codes = np.unique(raw, return_inverse=True)
        batch.flush_lists()  # records decoded one by one before this run keep their place
        batch.columns.append(
            (
                [bytes(u).decode("utf-8", "replace") for u in uniq],
                codes.astype(np.int32).ravel(),
                step.view(np.int64),
                m[:, 13:21].copy().view("<f8").ravel(),
                m[:, 13 + t1 : 17 + t1].copy().view("<f4").ravel().astype(np.float64),
            )
        )
        return k * s

    def _scan(self, data: bytes, batch: Batch) -> int:
        """Decode whole records of ``data`` into ``batch``; returns the bytes consumed."""
        tags, steps, walls, values = batch.tags, batch.steps, batch.wall_times, batch.values
        good_heads = self._good_heads
        tag_of: dict[bytes, str] = {}
        pause = 0  # fast records left before the next bulk try
        unpack_q, unpack_i, unpack_d, unpack_f = _unpack_q, _unpack_i, _unpack_d, _unpack_f
        crc, msk = crc32c, mask
        mv = memoryview(data)
        pos, end = 0, len(data)
        while pos + 12 <= end:
            head = data[pos : pos + 12]
            if head not in good_heads:
                if unpack_i(head, 8)[0] != msk(crc(head[:8])):
                    warn_corrupt(
                        self.path,
                        self.offset + pos,
                        "bad length CRC; the rest of the file is skipped",
                    )
                    self.dead = True
                    return pos
                if len(good_heads) < 65536:
                    good_heads.add(head)
            n = unpack_q(head)[0]
            stop = pos + 12 + n
            if stop + 4 > end:
                break  # torn tail of a live file: read again later
            c = crc(mv[pos + 12 : stop])  # type: ignore[arg-type]
            if unpack_i(data, stop)[0] != (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF:
                warn_corrupt(self.path, self.offset + pos, "bad data CRC; record skipped")
                pos = stop + 4
                continue
            # fast path: 09 <wall f64> 10 <step varint> 2a L 0a L' 0a T <tag> 15 <f32>
            p = pos + 12
            if data[p] == 0x09 and data[p + 9] in (0x10, 0x2A):
                q = p + 10
                step = data[q] if data[p + 9] == 0x10 else 0
                if data[p + 9] == 0x2A:
                    q = p + 9  # step 0: proto3 leaves the field out
                elif step < 0x80:
                    q += 1
                else:
                    step, shift = 0, 0
                    while True:
                        b = data[q]
                        step |= (b & 0x7F) << shift
                        q += 1
                        shift += 7
                        if b < 0x80:
                            break
                    if step >= 1 << 63:
                        step -= 1 << 64
                if (
                    q + 6 < stop
                    and data[q] == 0x2A
                    and data[q + 2] == 0x0A
                    and data[q + 4] == 0x0A
                    and q + 2 + data[q + 1] == stop
                    and q + 4 + data[q + 3] == stop
                ):
                    t = q + 6 + data[q + 5]
                    if t + 5 == stop and data[t] == 0x15 and data[q + 5] < 0x80:
                        raw = data[q + 6 : t]
                        tag = tag_of.get(raw)
                        if tag is None:
                            tag = tag_of[raw] = raw.decode("utf-8", "replace")
                        tags.append(tag)
                        steps.append(step)
                        walls.append(unpack_d(data, p + 1)[0])
                        values.append(unpack_f(data, t + 1)[0])
                        pos = stop + 4
                        if pause:
                            pause -= 1
                        elif n > 10:
                            klen = q - p - 10 if data[p + 9] == 0x10 else 0
                            layout = (q - p - klen, klen, q + 6 - p, t - p)
                            first = data[stop - n - 12 : pos]
                            used = self._bulk(data, pos, end, first, layout, batch)
                            pos += used
                            if not used:
                                pause = 64
                        continue
            self._slow(data[pos + 12 : stop], pos, batch)
            pos = stop + 4
        return pos

    def _slow(self, payload: bytes, pos: int, batch: Batch) -> None:
        from .proto import Event

        try:
            event = Event.FromString(payload)
        except Exception as exc:  # protobuf raises DecodeError; anything unparsable is reported
            warn_corrupt(self.path, self.offset + pos, f"unparsable Event ({exc}); record skipped")
            return
        if not event.HasField("summary"):
            return
        step, wall = int(event.step), float(event.wall_time)
        for value in event.summary.value:
            tag = value.tag
            if not any(value.HasField(f) for f in _MESSAGE_PAYLOADS) and (
                value.metadata.plugin_data.plugin_name in ("", "scalars")
            ):  # a simple_value (metadata-only values, e.g. hparams, name their plugin)
                batch.tags.append(tag)
                batch.steps.append(step)
                batch.wall_times.append(wall)
                batch.values.append(float(value.simple_value))
                continue
            kind = self._kind_of_tag.get(tag)
            names = [kind] if kind else list(self.decoders)
            for name in names:
                row = self.decoders[name](value, step, wall)
                if row is None:
                    continue
                self._kind_of_tag[tag] = name
                if name == "scalar":
                    batch.tags.append(tag)
                    batch.steps.append(step)
                    batch.wall_times.append(wall)
                    batch.values.append(float(row["value"]))
                else:
                    batch.add_row(name, {"tag": tag, "step": step, "wall_time": wall, **row})
                break


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> EventFileReader:
    return EventFileReader(fs, path, decoders)
