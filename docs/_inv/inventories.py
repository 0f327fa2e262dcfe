"""The intersphinx inventories the documentation links through, kept in this folder so the site
builds without network (CI reaches package registries only).

Two ways to make them:

- ``python docs/_inv/inventories.py --fetch`` (needs network) downloads the projects' full
  ``objects.inv`` files: every name of Python, NumPy and PyTorch becomes linkable. Commit the
  three ``.inv`` files it writes; run it again when a project moves its pages.
- ``python docs/_inv/inventories.py`` (the default, offline) writes inventories holding only the
  names listed in :data:`OFFLINE` below, each with the address of its entry in that project's
  documentation. These are what is committed while the full ones cannot be fetched; add a name
  here when a page or docstring links one that is missing (a link whose target no inventory
  holds renders as plain text: ``python -m sphinx -n`` lists them).

The files use Sphinx's inventory format (version 2: a four-line header, then zlib-compressed
lines ``name domain:role priority uri display``), read by ``sphinx.ext.intersphinx``.
"""

from __future__ import annotations

import argparse
import urllib.request
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: project key -> (project name, version, base URL the links point to); conf.py uses the same URLs.
PROJECTS = {
    "python": ("Python", "3", "https://docs.python.org/3"),
    "numpy": ("NumPy", "stable", "https://numpy.org/doc/stable"),
    "torch": ("PyTorch", "stable", "https://docs.pytorch.org/docs/stable"),
}

# (name, domain:role, uri relative to the base URL); "$" in a uri stands for the name.
OFFLINE: dict[str, list[tuple[str, str, str]]] = {
    "python": [
        *[
            (n, "py:class", "library/stdtypes.html#$")
            for n in ("str", "bytes", "dict", "list", "tuple", "set", "memoryview")
        ],
        *[
            (n, "py:class", "library/functions.html#$")
            for n in ("int", "float", "bool", "complex", "object")
        ],
        ("None", "py:data", "library/constants.html#$"),
        ("help", "py:function", "library/functions.html#$"),
        ("os.PathLike", "py:class", "library/os.html#$"),
        ("pathlib.Path", "py:class", "library/pathlib.html#$"),
        ("datetime.datetime", "py:class", "library/datetime.html#$"),
        ("datetime.timedelta", "py:class", "library/datetime.html#$"),
        ("pickle", "py:module", "library/pickle.html#module-pickle"),
        ("threading.Thread", "py:class", "library/threading.html#$"),
        ("warnings.warn", "py:function", "library/warnings.html#$"),
        ("warnings.catch_warnings", "py:class", "library/warnings.html#$"),
        *[
            (f"collections.abc.{n}", "py:class", "library/collections.abc.html#$")
            for n in ("Callable", "Iterable", "Iterator", "Mapping", "Sequence")
        ],
        *[(f"typing.{n}", "py:data", "library/typing.html#$") for n in ("Any",)],
        *[(f"typing.{n}", "py:class", "library/typing.html#$") for n in ("Protocol",)],
        *[
            (n, "py:exception", "library/exceptions.html#$")
            for n in (
                "Exception",
                "TypeError",
                "ValueError",
                "OSError",
                "RuntimeError",
                "ImportError",
                "KeyError",
                "MemoryError",
                "UserWarning",
                "Warning",
                "DeprecationWarning",
            )
        ],
    ],
    "numpy": [
        ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
        ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
        ("numpy.float32", "py:attribute", "reference/arrays.scalars.html#$"),
        ("numpy.float16", "py:attribute", "reference/arrays.scalars.html#$"),
        ("numpy.uint8", "py:attribute", "reference/arrays.scalars.html#$"),
        ("numpy.histogram", "py:function", "reference/generated/numpy.histogram.html#$"),
        ("numpy.asarray", "py:function", "reference/generated/numpy.asarray.html#$"),
    ],
    "torch": [
        ("torch.Tensor", "py:class", "tensors.html#$"),
        ("torch.nn.Module", "py:class", "generated/torch.nn.Module.html#$"),
        ("torch.jit.trace", "py:function", "generated/torch.jit.trace.html#$"),
        ("torch.distributed.init_process_group", "py:function", "distributed.html#$"),
        ("torch.distributed.all_reduce", "py:function", "distributed.html#$"),
        ("torch.utils.tensorboard", "py:module", "tensorboard.html#module-torch.utils.tensorboard"),
        ("torch.utils.tensorboard.writer.SummaryWriter", "py:class", "tensorboard.html#$"),
        *[
            (f"torch.utils.tensorboard.writer.SummaryWriter.{m}", "py:method", "tensorboard.html#$")
            for m in (
                "__init__",
                "add_scalar",
                "add_scalars",
                "add_histogram",
                "add_image",
                "add_images",
                "add_figure",
                "add_video",
                "add_audio",
                "add_text",
                "add_graph",
                "add_embedding",
                "add_pr_curve",
                "add_custom_scalars",
                "add_mesh",
                "add_hparams",
                "flush",
                "close",
            )
        ],
        ("torch.monitor", "py:module", "monitor.html#module-torch.monitor"),
        *[
            (f"torch.monitor.{n}", "py:class", "monitor.html#$")
            for n in (
                "Aggregation",
                "Stat",
                "Event",
                "EventHandlerHandle",
                "TensorboardEventHandler",
            )
        ],
        *[
            (f"torch.monitor.{n}", "py:function", "monitor.html#$")
            for n in ("log_event", "register_event_handler", "unregister_event_handler")
        ],
    ],
}


def encode(project: str, version: str, entries: list[tuple[str, str, str]]) -> bytes:
    """An inventory (format version 2) of ``entries``."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    lines = "".join(f"{name} {role} 1 {uri} -\n" for name, role, uri in sorted(entries))
    return header + zlib.compress(lines.encode(), 9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fetch", action="store_true", help="download the full inventories (needs network)"
    )
    args = parser.parse_args(argv)
    for key, (project, version, base) in PROJECTS.items():
        path = HERE / f"{key}.inv"
        if args.fetch:
            with urllib.request.urlopen(f"{base}/objects.inv", timeout=60) as response:
                data = response.read()
        else:
            data = encode(project, version, OFFLINE[key])
        path.write_bytes(data)
        print(f"{path.relative_to(HERE.parent.parent)}: {len(data):,} bytes")


if __name__ == "__main__":
    main()
