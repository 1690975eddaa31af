"""Board tests: small plans, and the rule for missing FPGA tools.

A test that needs amaranth-boards or the YoWASP tools is skipped when they are missing, unless
``NOC_REQUIRE_TOOLS=1`` (CI), where it fails instead.
"""

from __future__ import annotations

import importlib.util
import os

import pytest


def pytest_configure(config):
    # pyproject registers it too; kept so this folder runs on its own
    config.addinivalue_line("markers", "fpga: builds bitstreams with the YoWASP tools")


def _missing(what: str) -> None:
    if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{what} (NOC_REQUIRE_TOOLS=1)")
    pytest.skip(what)


@pytest.fixture
def boards_package():
    """amaranth-boards must be importable (plan-only builds need it)."""
    if importlib.util.find_spec("amaranth_boards") is None:
        _missing("amaranth-boards is not installed (the fpga extra)")


@pytest.fixture
def fpga_tools(boards_package):
    """The YoWASP tools (or the user's own, by environment variable) must be there."""
    from zfabric.boards.build import YOWASP, _find_tool

    missing = [
        exe
        for variable, exe in YOWASP.values()
        if not (os.environ.get(variable) or _find_tool(exe))
    ]
    if missing:
        _missing(f"FPGA tools not installed: {', '.join(missing)}")
