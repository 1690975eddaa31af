"""Verilog for a plan: one module per kind of switch, twin node and endpoint, and a top.

Switches of a kind (same ports, VCs, depth and route-unit structure: every switch of a torus,
every card of an nDT, every Znode switch of a level) differ only by their identity
(coordinates, Znode id), which comes in on an ``identity`` port driven by constants in the
top. Each kind is converted once and instantiated as often as the plan needs it, so emission
time grows with the number of kinds plus a top that only wires instances, not with the
number of switches times their logic.

:func:`write` (``zfabric verilog SPEC -o DIR``) writes ``<name>.v``, ``<name>.plan.json`` and
``<name>.ports`` (one ``direction width name`` line per top port).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import (
    ClockSignal,
    Const,
    Elaboratable,
    Instance,
    ResetSignal,
    Value,
    ValueCastable,
)
from amaranth.hdl._ir import PortDirection
from amaranth.lib import wiring

from zfabric.plan import FabricPlan

from .fabric import Fabric

__all__ = [
    "component_ports",
    "convert",
    "BlackBox",
    "Emission",
    "emit",
    "top_module_name",
    "untriggered_comb_blocks",
    "write",
]


def component_ports(component: wiring.Component) -> dict:
    """The ports ``verilog.convert`` would take from a signature, minus constant members.

    Amaranth 0.5 turns every signature member into a port, and refuses the constant ``ready``
    of an ``always_ready`` stream ("Only signals and IO ports may be added as ports"); a
    constant needs no port anyway.
    """
    ports = {}
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if not isinstance(value, Value) or isinstance(value, Const):
            continue
        flow = PortDirection.Input if member.flow == wiring.In else PortDirection.Output
        ports["__".join(map(str, path))] = (value, flow)
    return ports


#: Yosys' time-0 trigger of a comb process: a dummy ``reg`` declared with an initial value
_TRIGGER = re.compile(r"reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+) += 0;")


def convert(component: wiring.Component, name: str, **kwargs) -> str:
    """Verilog text of ``component`` as a module called ``name``.

    Yosys gives every ``always @*`` a dummy ``reg`` initialised to 0 in its declaration, so that
    the block runs once at time 0. Icarus in SystemVerilog mode (``-g2012``, cocotb's default)
    applies declaration initialisers before time 0, without an event, so a block whose inputs
    never change (a route unit behind a register that stays at its reset value) would hold x.
    The initialiser becomes an ``initial`` assignment, which is an event at time 0.
    """
    text = verilog.convert(component, name=name, ports=component_ports(component), **kwargs)
    return _TRIGGER.sub(r"reg \1 ;\n  initial \1 = 0;", text)


def _mark_used(obj, seen=None) -> None:
    """Tell Amaranth that a black-boxed component and the parts it built are not forgotten
    (they are elaborated once, in their kind's module, or not at all)."""
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Elaboratable):
        obj._MustUse__used = True
        for value in vars(obj).values():
            _mark_used(value, seen)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _mark_used(value, seen)
    elif isinstance(obj, dict):
        for value in obj.values():
            _mark_used(value, seen)


class BlackBox(Elaboratable):
    """Stands in for ``component``: an instance of ``module``, wired to the component's members
    under the names :func:`component_ports` gives them, and to the ``sync`` clock and reset
    (the ``clk`` and ``rst`` ports Amaranth gives every module that uses the domain)."""

    def __init__(self, component: wiring.Component, module: str):
        self.component = component
        self.module = module
        _mark_used(component)

    def elaborate(self, platform):
        ports = {"i_clk": ClockSignal("sync"), "i_rst": ResetSignal("sync")}
        for name, (value, flow) in component_ports(self.component).items():
            ports[("i_" if flow == PortDirection.Input else "o_") + name] = value
        return Instance(self.module, **ports)


@dataclass
class Emission:
    """Emitted Verilog and its figures."""

    top: str
    text: str
    #: module name -> instances of it in the fabric (the top itself not counted)
    kinds: dict[str, int] = field(default_factory=dict)
    #: (direction, width, name) per port of the top
    ports: list[tuple[str, int, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: seconds spent converting the kinds and the top
    kind_seconds: float = 0.0
    top_seconds: float = 0.0


def _identifier(name: str) -> str:
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return ident if re.match(r"[A-Za-z_]", ident) else f"zf_{ident}"


def top_module_name(plan: FabricPlan) -> str:
    """The top module's name :func:`emit` gives ``plan``'s fabric, and :func:`write` its files
    (``NAME.v``, ...): the plan's name made a Verilog identifier, so callers can check for
    those files before emitting."""
    return _identifier(plan.name)


def emit(plan: FabricPlan, *, name: str | None = None, share: bool = True) -> Emission:
    """Verilog of ``plan``'s fabric. ``share``: one module per kind (else one per instance)."""
    start = time.perf_counter()
    top = _identifier(name) if name else top_module_name(plan)
    kinds: dict[tuple, tuple[str, wiring.Component]] = {}
    counts: dict[str, int] = {}

    def wrap(component):
        key = component.kind
        if key not in kinds:
            kinds[key] = (f"{top}__{key[0]}{len(kinds)}", component)
        module = kinds[key][0]
        counts[module] = counts.get(module, 0) + 1
        return BlackBox(component, module)

    fabric = Fabric(plan, identity_ports=share, wrap=wrap if share else None)
    ports = component_ports(fabric)
    top_start = time.perf_counter()
    parts = [convert(fabric, top)]
    top_seconds = time.perf_counter() - top_start
    kind_start = time.perf_counter()
    for module, component in kinds.values():
        parts.append(convert(component, module))
    kind_seconds = time.perf_counter() - kind_start
    return Emission(
        top=top,
        text="\n".join(parts),
        kinds=counts,
        ports=[
            ("input" if flow == PortDirection.Input else "output", len(value), port)
            for port, (value, flow) in ports.items()
        ],
        seconds=time.perf_counter() - start,
        kind_seconds=kind_seconds,
        top_seconds=top_seconds,
    )


def write(plan: FabricPlan, directory: Path, *, share: bool = True) -> Emission:
    """Write ``<name>.v``, ``<name>.plan.json`` and ``<name>.ports`` into ``directory``."""
    emission = emit(plan, share=share)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{emission.top}.v").write_text(emission.text)
    (directory / f"{emission.top}.plan.json").write_text(plan.to_json(indent=1))
    (directory / f"{emission.top}.ports").write_text(
        "".join(f"{d} {w} {n}\n" for d, w, n in emission.ports)
    )
    return emission


def untriggered_comb_blocks(text: str) -> list[str]:
    """The ``always @*`` blocks of ``text`` without Yosys' time-0 trigger.

    Verilog runs an ``always @*`` only when one of its inputs changes. Yosys' write_verilog
    gives its combinational processes a dummy ``reg`` that (once :func:`convert` makes its
    initialiser an ``initial``) changes at time 0 so they run once,
    but not the one-line processes it emits for a signal assigned piecewise (part of it under
    an ``If``, the rest outside). Such a block holds x in Icarus until an input changes, and
    forever when none does; our RTL keeps every comb signal in one assignment so there are none.
    """
    blocks = re.findall(r"always @\*(.*\n.*)", text)
    return [block for block in blocks if not re.match(r" begin\n\s*if \(\\\$auto\$", block)]
