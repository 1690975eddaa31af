"""Formal fixtures: the SymbiYosys runner, skipping cleanly when its tools are missing."""

from __future__ import annotations

import os

import pytest
from zfabric.hdl.formal.sby import FormalResult, run_sby, tools_missing


@pytest.fixture
def sby(tmp_path):
    """``sby(harness, mode, depth)``: run SymbiYosys on ``harness`` in a temporary folder.

    Skips when yowasp-sby or the solver is missing, or fails under ``NOC_REQUIRE_TOOLS=1``."""
    missing = tools_missing()
    if missing:
        if os.environ.get("NOC_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{', '.join(missing)} not available (NOC_REQUIRE_TOOLS=1)")
        pytest.skip(f"{', '.join(missing)} not available")

    def run(harness, mode: str, depth: int) -> FormalResult:
        return run_sby(harness, tmp_path / mode, mode=mode, depth=depth)

    return run


def pytest_collection_modifyitems(config, items):
    """The long proofs (``formal`` marker) run only when selected with ``-m formal``."""
    if "formal" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long proof: run with -m formal")
    for item in items:
        if item.get_closest_marker("formal") is not None:
            item.add_marker(skip)
