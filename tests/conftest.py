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
