"""Links from a page to a folder of the repository (``[examples/x/](../examples/x)``): GitHub
shows them as links, but a folder is nothing Sphinx can link to or copy, so on the site such a
link becomes its text. Links to files of the repository become downloads (MyST's own rule) and
links to pages stay cross-references; a link to a path that does not exist still warns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)\)")


def _unlink_folders(app: Any, docname: str, source: list[str]) -> None:
    page = Path(app.env.doc2path(docname))
    repo = Path(app.srcdir).resolve().parent

    def replace(match: re.Match[str]) -> str:
        target = match.group(2)
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        path = (page.parent / target).resolve()
        if path.is_dir() and repo in path.parents:
            return match.group(1)
        return match.group(0)

    source[0] = LINK.sub(replace, source[0])


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _unlink_folders)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
