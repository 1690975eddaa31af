"""Shared fixtures: specs by name from examples/."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def example() -> callable:
    """``example("torus-4x4")`` -> path of examples/torus-4x4.yaml."""

    def path(name: str) -> Path:
        return EXAMPLES / f"{name}.yaml"

    return path


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
