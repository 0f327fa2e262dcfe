"""Sphinx configuration of tallyboard's documentation site.

Build it with ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (``pip install -e
".[docs]"`` first); ``tests/test_docs_site.py`` builds it the same way, warnings as errors.

The pages are Markdown (MyST), the same files GitHub shows and ``tests/test_docs.py`` runs. The
API reference is generated from the docstrings (autodoc, Google-style sections through napoleon).
Intersphinx reads the inventories of Python, NumPy and PyTorch from ``docs/_inv/``, committed, so
the build needs no network; ``python docs/_inv/inventories.py --help`` says how to refresh them.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import tallyboard  # noqa: E402  (installed: pip install -e ".[docs]")

project = "tallyboard"
author = "the tallyboard authors"
copyright = "the tallyboard authors"  # noqa: A001 (Sphinx's name)
release = version = tallyboard.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx_copybutton",
    "tallyboard_cli",
    "repo_links",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_inv", "_ext", "Thumbs.db", ".DS_Store"]

# MyST: headings get anchors as GitHub makes them, so links like plugins.md#9-testing-your-plugin
# work on GitHub and on the site alike.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"tallyboard {release}"
html_static_path = ["_static"]
html_css_files = ["tables.css", "code.css"]

# Copy buttons leave out console prompts and the output lines after them.
copybutton_prompt_text = "$ "
copybutton_only_copy_prompt_lines = True

# The API reference: docstrings are the single source.
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_class_signature = "separated"
autodoc_preserve_defaults = False
# The docs extra alone builds the site: MindSpore and pytest are no dependency of it. autodoc
# imports SummaryCollector (a subclass of MindSpore's Callback) and tallyboard.testing's fixtures
# (pytest.fixture-decorated) with those two mocked: their own docstrings and signatures are
# documented, nothing is taken from MindSpore or pytest.
autodoc_mock_imports = ["mindspore", "pytest"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Offline inventories (docs/_inv/*.inv); the URLs are where the links point.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", str(HERE / "_inv" / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable", str(HERE / "_inv" / "numpy.inv")),
    "torch": ("https://docs.pytorch.org/docs/stable", str(HERE / "_inv" / "torch.inv")),
}
