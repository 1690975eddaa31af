"""Shared fixtures: specs by name from examples/; the set-up cache in a folder of the run's.
And the ``matrix`` cases: run whole with ``-m matrix``; otherwise each run takes one slice of
the lock-step ones, chosen by the commit under test, so that every landing covers a part of the
matrix the default run leaves out."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: the lock-step matrix cases are cut into this many slices; a run takes the one its commit
#: picks (``ZFABRIC_MATRIX_SLICE=I/K`` picks slice I of K by hand, ``0/0`` none)
MATRIX_SLICES = 48
#: the variable that picks a slice by hand, to rerun the slice a run printed
SLICE_VARIABLE = "ZFABRIC_MATRIX_SLICE"


@pytest.fixture
def example() -> callable:
    """``example("torus-4x4")`` -> path of examples/torus-4x4.yaml."""

    def path(name: str) -> Path:
        return EXAMPLES / f"{name}.yaml"

    return path


def matrix_slice() -> tuple[int, int, str] | None:
    """``(index, slices, chosen by)``: the slice of the lock-step matrix this run takes, from
    :data:`SLICE_VARIABLE` or else from the commit checked out (a hash of it, so consecutive
    landings take slices at random and coverage grows with each); None without either."""
    chosen = os.environ.get(SLICE_VARIABLE)
    if chosen:
        found = re.fullmatch(r"(\d+)/(\d+)", chosen.strip())
        index, slices = (int(found[1]), int(found[2])) if found else (0, -1)
        if slices == 0:
            return None
        if not 0 <= index < slices:
            raise pytest.UsageError(f"{SLICE_VARIABLE} must be I/K, 0 <= I < K, got {chosen!r}")
        return index, slices, SLICE_VARIABLE
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return int(commit[:12], 16) % MATRIX_SLICES, MATRIX_SLICES, f"commit {commit[:12]}"


#: lock-step cases left to ``-m matrix`` alone: the 128-endpoint 3DTs under Verilator, whose
#: builds take 15 to 50 minutes (docs/cosim.md), more than a run's share of CI's time
OUTSIDE_SLICES = ("test_lockstep_3dt_adaptive_and_tsdor_verilator",)
#: fabrics whose lock-step matrix cases are left to ``-m matrix`` alone: the 128-endpoint Snode
#: under Icarus takes 5 to 20 minutes a case (a slice holding several of them took an hour of
#: CI's worker time), the 768-processor Transit hybrid 27 minutes and 13 GB; their default-run
#: cases stay
OUTSIDE_SLICE_FABRICS = ("snode-128", "hybrid-768")


def _lockstep(item: pytest.Item) -> bool:
    """A lock-step case a slice may take: the RTL against the model in co-simulation."""
    name = getattr(item, "originalname", item.name)
    return (
        item.path.parent.name == "rtl"
        and name.startswith(("test_lockstep", "test_stress"))
        and name not in OUTSIDE_SLICES
        and not any(fabric in item.name for fabric in OUTSIDE_SLICE_FABRICS)
    )


def _in_slice(item: pytest.Item, index: int, slices: int) -> bool:
    """Whether ``item`` is in slice ``index``: by a hash of its id, so the slices do not
    depend on which other tests were collected (a rerun of one file takes the same cases)."""
    digest = hashlib.sha256(item.nodeid.encode()).hexdigest()
    return int(digest[:12], 16) % slices == index


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "matrix_slice: the lock-step matrix cases of this run's slice (conftest.py)"
    )


def pytest_report_header(config):
    chosen = matrix_slice()
    if chosen is None:
        return "lock-step matrix slice: none (no git commit and no ZFABRIC_MATRIX_SLICE)"
    index, slices, source = chosen
    return (
        f"lock-step matrix slice {index}/{slices}, chosen by {source}; rerun it alone:"
        f" {SLICE_VARIABLE}={index}/{slices} .venv/bin/python -m pytest -m matrix_slice"
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker: -m matrix_slice sees them
def pytest_collection_modifyitems(config, items):
    """The ``matrix`` tests (every router setting x fabric x load, the slow Verilator cases, the
    ECP5 bitstream) run only when selected with ``-m matrix``, but for this run's slice of the
    lock-step ones (:func:`matrix_slice`), marked ``matrix_slice``."""
    if re.search(r"\bmatrix\b", config.getoption("markexpr") or ""):
        return
    chosen = matrix_slice()
    skip = pytest.mark.skip(reason="full router matrix: run with -m matrix")
    for item in items:
        if "matrix" not in item.keywords:
            continue
        if chosen and _lockstep(item) and _in_slice(item, *chosen[:2]):
            item.add_marker(pytest.mark.matrix_slice)
        else:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    """The slice's cases and how each went, so a failure can be rerun by its id."""
    seen = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            # deselected items are listed too, as items, not reports: they have no ``when``
            when = getattr(report, "when", None)
            if "matrix_slice" in getattr(report, "keywords", {}) and when in ("setup", "call"):
                if when == "call" or report.outcome != "passed":
                    seen[report.nodeid] = report.outcome
    if seen:
        terminalreporter.write_sep("-", f"lock-step matrix slice: {len(seen)} cases")
        for nodeid, outcome in sorted(seen.items()):
            terminalreporter.write_line(f"{outcome.upper():8} {nodeid}")


@pytest.fixture(autouse=True, scope="session")
def _setup_cache(tmp_path_factory):
    """Every test, and every command a test starts, caches routing verdicts and pattern limits
    in a fresh folder of this run (zfabric.setup_cache), never in the user's cache."""
    os.environ["ZFABRIC_SETUP_DIR"] = str(tmp_path_factory.mktemp("setup-cache"))
