"""Reading TensorBoard event files back, from any writer (torch, tensorboardX, TF, plugboard).

Scalars take a fast path: records are scanned in one loop, CRCs checked with the C CRC-32C,
and the common scalar ``Event`` (wall_time, step, one ``simple_value``) is decoded by hand into
columns. Every other record is parsed with protobuf and each ``Summary.Value`` handed to the
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
            data = f.read()
        self.offset += self._scan(data, batch)
        return batch

    def _scan(self, data: bytes, batch: Batch) -> int:
        """Decode whole records of ``data`` into ``batch``; returns the bytes consumed."""
        tags, steps, walls, values = batch.tags, batch.steps, batch.wall_times, batch.values
        good_heads = self._good_heads
        tag_of: dict[bytes, str] = {}
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
