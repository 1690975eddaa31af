"""bench/model_speed.py refuses a bad ``--cases`` entry up front: one line naming it, exit
status 2, no traceback, before any fabric is built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "model_speed.py"


@pytest.mark.parametrize(
    "case, problem",
    [
        ("bogus@0.1", "no torus-KxK... and no examples/bogus.yaml"),
        ("torus-4x4", "must be NAME@RATE with a rate in (0, 1]"),
        ("torus-4x4@1.5", "must be NAME@RATE with a rate in (0, 1]"),
        ("torus-4xa@0.1", "a torus is torus-KxK... with each K at least 2"),
        ("torus-1x4@0.1", "a torus is torus-KxK... with each K at least 2"),
    ],
)
def test_a_bad_case_is_refused_in_one_line(case, problem):
    done = subprocess.run(
        [sys.executable, str(BENCH), "--cases", f"torus-4x4@0.1,{case}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"model_speed.py: --cases: {case!r}: {problem}\n"
    assert done.stdout == ""
