"""Sphinx configuration of sowctl's documentation (MyST Markdown pages in this folder).

Build: ``python -m sphinx -W --keep-going -n -b html docs docs/_build/html`` (what .ci/docs runs).
"""

from __future__ import annotations

import sowctl

project = "sowctl"
author = "sowctl maintainers"
copyright = "2026, sowctl maintainers"
release = version = sowctl.__version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links work, and broken ones are errors
suppress_warnings: list[str] = []

html_theme = "alabaster"
html_title = f"sowctl {release}"
html_static_path: list[str] = []
