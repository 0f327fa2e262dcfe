"""Incremental reading of TFRecord-framed files, whatever their payloads are.

TensorBoard event files and MindSpore summary files share one framing: ``uint64 length |
masked CRC-32C of the length | payload | masked CRC-32C of the payload``. A format's reader
subclasses :class:`RecordFileReader` and decodes payloads in :meth:`RecordFileReader.record`;
this module keeps the guarantees every such reader owes its users:

- the file is read in chunks (:class:`tallyboard.plugin.readers.ChunkedFileReader`; a longer record is read whole), so memory
  holds one chunk, not the file;
- every CRC is checked, with the C CRC-32C when one is installed;
- a torn last record (a live file mid-write) is left for the next :meth:`~RecordFileReader.read_new`,
  which returns only what was appended since the previous call;
- a bad payload CRC is reported (:func:`tallyboard.plugin.readers.warn_corrupt`, naming file and offset)
  and that record skipped; a bad length CRC is reported and the rest of the file skipped, since
  no later record boundary can be trusted.
"""

from __future__ import annotations

import struct
from typing import Any

from tallyboard.plugin.readers import Batch, ChunkedFileReader, warn_corrupt
from tallyboard.records.framing import crc32c, mask

_unpack_q = struct.Struct("<Q").unpack_from
_unpack_i = struct.Struct("<I").unpack_from


class RecordFileReader(ChunkedFileReader):
    """One framed file; :meth:`read_new` returns the records appended since the previous call."""

    def __init__(self, fs: Any, path: str) -> None:
        super().__init__(fs, path)
        self._good_heads: set[bytes] = set()

    def record(self, data: bytes, pos: int, stop: int, end: int, batch: Batch) -> int:
        """Decode the record at ``pos`` (payload ``data[pos + 12 : stop]``, CRCs checked) into
        ``batch``; return where scanning goes on: ``stop + 4``, or further when the reader
        decoded the records that follow itself (checking them with :func:`leading_good_crcs`).
        ``end`` is the end of the whole records and torn tail ``data`` holds."""
        raise NotImplementedError

    def _scan(self, data: bytes, batch: Batch) -> int:
        """Check and decode the whole records of ``data``; returns the bytes consumed."""
        good_heads = self._good_heads
        unpack_q, unpack_i, crc, msk, record = _unpack_q, _unpack_i, crc32c, mask, self.record
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
            stop = pos + 12 + unpack_q(head)[0]
            if stop + 4 > end:
                self._need = stop + 4 - pos
                break  # torn tail of a live file: read again later
            c = crc(mv[pos + 12 : stop])  # type: ignore[arg-type]
            if unpack_i(data, stop)[0] != (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF:
                warn_corrupt(self.path, self.offset + pos, "bad data CRC; record skipped")
                pos = stop + 4
                continue
            pos = record(data, pos, stop, end, batch)
        return pos


def leading_good_crcs(data: bytes, pos: int, size: int, count: int) -> int:
    """How many of the ``count`` records of ``size`` bytes each (framing included) laid end to
    end at ``pos`` have a good payload CRC, counted from the first up to the first bad one.

    For readers decoding runs of alike records at once; their headers must be checked apart
    (records of one length share their 12 header bytes, so comparing them with a checked
    header is enough)."""
    import numpy as np

    n = size - 16
    crc, mv = crc32c, memoryview(data)
    c = np.fromiter(
        (crc(mv[i : i + n]) for i in range(pos + 12, pos + 12 + count * size, size)),  # type: ignore[arg-type]
        np.uint64,
        count,
    )
    masked = (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    stored = np.frombuffer(data, np.uint8, count * size, pos).reshape(count, size)[:, size - 4 :]
    ok = masked == stored.copy().view("<u4").ravel()
    return count if ok.all() else int(np.argmin(ok))
