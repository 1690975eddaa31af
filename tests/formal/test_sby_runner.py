"""The SymbiYosys runner's own guard: a run that outlives its timeout is stopped, solver and
all (once SymbiYosys sat in "terminating process" for 20 minutes after a solver timeout)."""

from __future__ import annotations

import os
import time

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from zfabric.hdl.formal import sby


class Idle(wiring.Component):
    """Something to write out: the fake SymbiYosys never reads it."""

    def __init__(self):
        super().__init__({"a": In(1)})

    def elaborate(self, platform):
        return Module()


HANGING_SBY = """#!/bin/sh
trap '' TERM INT
setsid sleep 300 &  # in a group (and session) of its own, as SymbiYosys starts its engines
echo $! > solver.pid
echo "SBY [harness] engine_0: Checking assertions in step 3.."
wait
"""


def test_a_run_past_its_timeout_is_killed_with_its_solver(tmp_path, monkeypatch):
    fake = tmp_path / "fake-sby"
    fake.write_text(HANGING_SBY)
    fake.chmod(0o755)
    monkeypatch.setattr(sby, "_find", lambda name: str(fake) if name == sby.SBY else None)
    monkeypatch.setattr(sby, "GRACE_SECONDS", 1)
    start = time.monotonic()
    result = sby.run_sby(Idle(), tmp_path / "run", mode="prove", depth=4, timeout=1)
    assert time.monotonic() - start < 30
    assert (result.status, result.passed) == ("TIMEOUT", False)
    assert result.checked == 2  # step 3 was being checked: 0..2 passed
    assert "killed" in result.log
    solver = int((tmp_path / "run" / "solver.pid").read_text())
    time.sleep(0.2)
    try:
        os.kill(solver, 0)
    except ProcessLookupError:
        return
    # a zombie still answers signal 0: it must at least be dead
    with open(f"/proc/{solver}/stat") as stat:
        assert stat.read().split()[2] == "Z"
