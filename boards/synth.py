"""Area and clock of a fabric's emitted Verilog, per module kind and in total, with YoWASP.

What ``zfabric synth`` prints, and the figures the benches quote for any user's spec:

- **Area**: one yosys run over the emitted fabric with every kind module (a switch, twin node or
  endpoint kind, see :class:`zfabric.hdl.verilog.Emission`) kept as a hierarchy boundary and
  everything inside it flattened, so each kind is mapped once, as it is emitted (identity as an
  input, not a constant). The whole fabric's figure is the top's own cells plus each kind's
  figure times its instances: what the emitted design costs.
- **Fmax**: each kind synthesised on its own and placed and routed out of context on an
  ECP5-85F (no I/O buffers: a switch has more ports than the package has pins), one nextpnr per
  placement seed, one after the other; the median is the figure. iCE40 nextpnr has no
  out-of-context flow, so iCE40 clock figures come from the board builds (``zfabric board``).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .build import FLOWS, Flow, parse_fmax, tool_environment

__all__ = ["DEVICES", "SynthError", "KindFigures", "area", "ecp5_fmax"]

#: device -> (yosys synthesis command, cell type -> figure)
DEVICES: dict[str, tuple[str, dict[str, str]]] = {
    "ecp5-85f": (
        "synth_ecp5 -nowidelut",
        {
            "LUT4": "LUT4",
            "CCU2C": "carry",
            "TRELLIS_FF": "FF",
            "TRELLIS_DPR16X4": "LUTRAM",
            "DP16KD": "RAM",
        },
    ),
    "ice40-up5k": (
        "synth_ice40",
        {
            "SB_LUT4": "LUT4",
            "SB_CARRY": "carry",
            **{
                ff: "FF"
                for ff in ("SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFESR", "SB_DFFR", "SB_DFFER")
            },
            **{ff: "FF" for ff in ("SB_DFFS", "SB_DFFES", "SB_DFFSS", "SB_DFFESS")},
            "SB_RAM40_4K": "RAM",
        },
    ),
}
FIGURES = ("LUT4", "carry", "FF", "LUTRAM", "RAM")

#: the clock out-of-context place and route aims at, MHz
OUT_OF_CONTEXT_MHZ = 100.0


class SynthError(Exception):
    """A tool failed; the message ends with the last lines of its log."""


@dataclass
class KindFigures:
    """One module's cells (its submodules flattened into it) and, with Fmax, its clock."""

    module: str
    instances: int
    cells: dict[str, int] = field(default_factory=dict)
    fmax_mhz: list[float] = field(default_factory=list)

    @property
    def fmax_median(self) -> float | None:
        return statistics.median(self.fmax_mhz) if self.fmax_mhz else None

    def as_dict(self) -> dict:
        out = asdict(self)
        out["fmax_median_mhz"] = self.fmax_median
        return out


def _run(argv: list[str], cwd: str, env: dict, log: str) -> None:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode:
        text = Path(cwd, log).read_text() if Path(cwd, log).exists() else result.stderr
        tail = " / ".join(line for line in text.strip().splitlines()[-3:])
        raise SynthError(f"{Path(argv[0]).name} failed (exit {result.returncode}): {tail}")


def _module_cells(stat: str) -> dict[str, dict[str, int]]:
    """yosys ``stat``: module -> cell type -> count (submodule instances appear as cells)."""
    modules: dict[str, dict[str, int]] = {}
    for section in re.split(r"^=== ", stat, flags=re.M)[1:]:
        name, _, body = section.partition(" ===")
        if name == "design hierarchy":
            continue
        cells = modules.setdefault(name.strip(), {})
        for number, cell in re.findall(r"^\s+(\d+)\s+(\S+)\s*$", body, re.M):
            cells[cell] = cells.get(cell, 0) + int(number)
    return modules


def area(
    verilog: str, top: str, kinds: dict[str, int], device: str
) -> tuple[list[KindFigures], dict[str, int]]:
    """Cells per kind module and in total (see the module docstring)."""
    command, cell_names = DEVICES[device]
    env, tools = tool_environment()
    keep = "".join(f"setattr -mod -set keep_hierarchy 1 {module}\n" for module in kinds)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(verilog)
        Path(tmp, "synth.ys").write_text(
            f"read_verilog design.v\nhierarchy -top {top}\n{keep}"
            f"{command} -top {top}\ntee -q -o stat.txt stat\n"
        )
        _run([tools["yosys"], "-q", "-l", "synth.log", "synth.ys"], tmp, env, "synth.log")
        modules = _module_cells(Path(tmp, "stat.txt").read_text())

    def figures(module: str) -> dict[str, int]:
        out = dict.fromkeys(FIGURES, 0)
        for cell, count in modules.get(module, {}).items():
            if cell in cell_names:
                out[cell_names[cell]] += count
        return out

    per_kind = [KindFigures(module, count, figures(module)) for module, count in kinds.items()]
    total = figures(top)
    for kind in per_kind:
        for name in FIGURES:
            total[name] += kind.cells[name] * kind.instances
    return per_kind, total


def ecp5_fmax(
    verilog: str,
    module: str,
    seeds: range,
    *,
    each: Callable[[float], None] | None = None,
    flow: Flow | None = None,
    freq_mhz: float = OUT_OF_CONTEXT_MHZ,
) -> list[float]:
    """Post-route Fmax of ``module`` on an ECP5-85F out of context, one figure per seed.

    ``flow`` is the ECP5 one of :data:`~zfabric.boards.build.FLOWS` unless a bench compares
    another; ``freq_mhz`` is the clock nextpnr's timing-driven placement and routing aim at.
    """
    flow = FLOWS["ecp5"] if flow is None else flow
    env, tools = tool_environment()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(verilog)
        Path(tmp, "synth.ys").write_text(
            f"read_verilog design.v\nsynth_ecp5 {' '.join(flow.synth)} -top {module} "
            "-json design.json\n"
        )
        _run([tools["yosys"], "-q", "-l", "synth.log", "synth.ys"], tmp, env, "synth.log")
        fmax = []
        for seed in seeds:
            pnr = [tools["nextpnr-ecp5"], "--85k", "--out-of-context", "--json", "design.json"]
            pnr += ["--package", "CABGA381", "--freq", f"{freq_mhz:g}", "--timing-allow-fail"]
            pnr += [*flow.nextpnr, "--log", "pnr.log", "--seed", str(seed)]
            _run(pnr, tmp, env, "pnr.log")
            clocks = parse_fmax(Path(tmp, "pnr.log").read_text())
            if not clocks:
                raise SynthError(f"nextpnr reported no clock for {module} (no registers?)")
            fmax.append(min(clock["fmax_mhz"] for clock in clocks.values()))
            if each:
                each(fmax[-1])
    return fmax
