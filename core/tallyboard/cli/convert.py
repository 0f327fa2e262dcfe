"""``tallyboard convert``: every run of a log dir rewritten in another format."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tallyboard.cli.common import CliError, Progress


def cmd_convert(
    src: str, dst: str, to: str, force: bool, formats: Sequence[str] | None = None
) -> int:
    from tallyboard.reading.convert import convert

    bar: list[Progress] = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(Progress(total, "convert"))
        bar[0].update()

    try:
        summary = convert(src, dst, to, force=force, progress=progress, formats=formats)
    except FileExistsError:
        raise CliError(
            f"{dst} already holds files; pass --force to add the converted runs beside them "
            "(no existing file is overwritten)"
        ) from None
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None
    finally:
        if bar:
            bar[0].close()
    if not summary.files:
        print(
            f"tallyboard convert: no readable files under {src}; nothing written", file=sys.stderr
        )
        return 0
    print(f"tallyboard convert: {summary.converted_line()}", file=sys.stderr)
    line = summary.not_converted_line()
    if line:
        print(f"tallyboard convert: {line}", file=sys.stderr)
    return 0
