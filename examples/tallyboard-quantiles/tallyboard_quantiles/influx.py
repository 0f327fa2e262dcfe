"""The ``influx`` sink: InfluxDB 2's line protocol over HTTP, a network sink with settings.

Each scalar and quantiles value is one point, ``<tag>,run=<run> <field>=<value>,...,step=<step>i
<nanoseconds>``, POSTed in batches to ``<url>/api/v2/write?org=...&bucket=...&precision=ns``
with ``Authorization: Token <token>``. Line protocol holds no NaN or infinity: such a field is
left out (a point with no field left is not sent) and a SinkWarning says so once per tag. A 4xx
answer (a bad token, a bad line) is a refusal; anything else is retried within the deadline.
"""

import math
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from tallyboard.plugin import NetworkSettings, NetworkSink, SinkSpec
from tallyboard.warn import SinkWarning, warn_once

Point = tuple[str, str, int]  # measurement, fields, nanoseconds: the sink adds the run


@dataclass(frozen=True)
class InfluxSettings(NetworkSettings):  # url, timeout, batch_size, deadline, ... and these
    token: str = ""
    org: str = ""
    bucket: str = "tallyboard"


def escape(text: str, special: str = ",= ") -> str:
    """``text`` with backslashes and ``special`` escaped, as line protocol wants."""
    for char in "\\" + special:
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def point(tag: str, step: int | None, wall_time: float, fields: dict[str, float]) -> Point | None:
    """A point of the finite ``fields``; None when none is finite."""
    kept = {name: value for name, value in fields.items() if math.isfinite(value)}
    if len(kept) < len(fields):
        left = ", ".join(sorted(set(fields) - set(kept)))
        message = f"influx sink: {tag!r} has values line protocol cannot hold ({left}): left out"
        warn_once(("influx", tag), message, SinkWarning)
    if not kept:
        return None
    text = ",".join(f"{escape(name)}={value!r}" for name, value in kept.items())
    text += "" if step is None else f",step={step}i"
    return escape(tag, ", "), text, round(wall_time * 1e9)


def encode_scalar(tag: str, step: int | None, wall_time: float, value: Any) -> Point | None:
    return point(tag, step, wall_time, {"value": float(getattr(value, "value", value))})


def encode_quantiles(tag: str, step: int | None, wall_time: float, q: Any) -> Point | None:
    return point(tag, step, wall_time, q._asdict())


class InfluxSink(NetworkSink):
    """POSTs batches of points to the ``url`` setting's (or the entry's) ``/api/v2/write``."""

    def __init__(self, options: Any) -> None:
        base, settings = self.url_of(options), options.settings
        if not base.startswith(("http://", "https://")):
            raise ValueError(
                f"give the influx sink a URL: {{'url': 'http://host:8086'}}, not {base!r}"
            )
        query = {"org": settings.org, "bucket": settings.bucket, "precision": "ns"}
        self.url = f"{base.rstrip('/')}/api/v2/write?{urllib.parse.urlencode(query)}"
        self.headers = {"Content-Type": "text/plain; charset=utf-8"}
        if settings.token:
            self.headers["Authorization"] = f"Token {settings.token}"
        self.run = escape(options.run)
        super().__init__(options, where=base)

    def send(self, items: list[Point]) -> None:
        body = "\n".join(f"{m},run={self.run} {fields} {ns}" for m, fields, ns in items)
        request = urllib.request.Request(self.url, body.encode(), self.headers)
        urllib.request.urlopen(request, timeout=self.call_timeout()).close()

    def is_refusal(self, exc: BaseException) -> bool:  # a 4xx: not sent again; else retried
        code = getattr(exc, "code", None) or 500
        return 400 <= code < 500 and code not in (408, 429)


SPEC = SinkSpec(name="influx", open=InfluxSink, settings=InfluxSettings, description="InfluxDB 2")
