"""Shared fixtures: specs by name from examples/; the set-up cache in a folder of the run's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def example() -> callable:
    """``example("torus-4x4")`` -> path of examples/torus-4x4.yaml."""

    def path(name: str) -> Path:
        return EXAMPLES / f"{name}.yaml"

    return path


@pytest.fixture(autouse=True, scope="session")
def _setup_cache(tmp_path_factory):
    """Every test, and every command a test starts, caches routing verdicts and pattern limits
    in a fresh folder of this run (zfabric.setup_cache), never in the user's cache."""
    os.environ["ZFABRIC_SETUP_DIR"] = str(tmp_path_factory.mktemp("setup-cache"))


def pytest_collection_modifyitems(config, items):
    """The ``matrix`` tests (every router setting x fabric x load, the slow Verilator cases, the
    ECP5 bitstream) run only when selected with ``-m matrix``: the default run keeps a
    representative slice."""
    if "matrix" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="full router matrix: run with -m matrix")
    for item in items:
        if "matrix" in item.keywords:
            item.add_marker(skip)
