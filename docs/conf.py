"""Sphinx configuration of the zfabric documentation (built by .ci/run with -W)."""

from importlib.metadata import version as installed_version

project = "zfabric"
author = "the zfabric authors"
release = installed_version("zfabric")
version = release

extensions = [
    "myst_parser",  # the pages stay Markdown
    "sphinx.ext.autodoc",  # the Python API from its docstrings
    "sphinx.ext.napoleon",  # numpydoc sections in those docstrings
    "sphinxarg.ext",  # the command reference from the real parser
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# every heading down to ### gets an anchor, so [text](page.md#section) links are checked
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "dollarmath"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_custom_sections = [("Members", "params_style")]

html_theme = "furo"
html_title = f"zfabric {release}"
html_static_path = []
