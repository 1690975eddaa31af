"""Verilog for a plan: one module per kind of switch, twin node and endpoint, and a top.

Switches of a kind (same ports, VCs, depth and route-unit structure: every switch of a torus,
every card of an nDT, every Znode switch of a level) differ only by their identity
(coordinates, Znode id), which comes in on an ``identity`` port driven by constants in the
top. Each kind is converted once and instantiated as often as the plan needs it, so emission
time grows with the number of kinds plus a top that only wires instances, not with the
number of switches times their logic. Yosys writes each in a run of its own (the top's with
the kinds as black boxes), so one run never holds more than one kind; a kind's submodule too
big to flatten (:data:`FLATTEN_CELLS`) stays a module of its own (docs/rtl.md).

:func:`write` (``zfabric verilog SPEC -o DIR``) writes ``<name>.v`` (or, split, one file per
module), ``<name>.vlt`` (Verilator waivers for ``-Wall``), ``<name>.plan.json``,
``<name>.ports`` (one ``direction width name`` line per top port) and, for the designer, a
README, an instantiation template and a self-checking testbench (``fabric_docs``,
``testbench``). The Verilog's header comment says what was generated from what; module
and port names come from :mod:`~zfabric.hdl.naming`.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import amaranth
from amaranth._toolchain.yosys import YosysError, find_yosys
from amaranth.back import rtlil
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
from .fabric_docs import Hops, instantiation_template, readme
from .flit import FlitLayout
from .naming import (
    CLOCK_PORTS,
    clock_ports,
    identifier,
    kind_names,
    port_legend,
    top_port_order,
    with_clock_ports,
)
from .testbench import testbench

__all__ = [
    "FLATTEN_CELLS",
    "SUFFIXES",
    "WAIVERS",
    "component_ports",
    "convert",
    "BlackBox",
    "Emission",
    "EmissionError",
    "emit",
    "split_modules",
    "top_module_name",
    "untriggered_comb_blocks",
    "waivers",
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

#: a port wire of an RTLIL module: ``wire width 32 input 5 \s0_axis_tdata``
_PORT_WIRE = re.compile(r"^(  wire .*\b(?:input|output|inout) )(\d+)( +\\(\S+))$", re.M)
#: one RTLIL cell of a built-in type, its parameters and connections
_CELL = re.compile(r"^  cell (\$\w+) (\S+)\n((?:    .*\n)*?)  end\n", re.M)
#: cells whose operands (and result) Yosys extends to the widest of A, B and Y
_WIDEST_OF_ABY = frozenset(
    {
        "$add",
        "$sub",
        "$mul",
        "$div",
        "$mod",
        "$divfloor",
        "$modfloor",
        "$and",
        "$or",
        "$xor",
        "$xnor",
    }
)
#: comparisons: operands extended to the wider of A and B
_WIDEST_OF_AB = frozenset({"$eq", "$ne", "$lt", "$le", "$gt", "$ge", "$eqx", "$nex"})
#: unary cells: A extended to Y
_UNARY = frozenset({"$not", "$neg", "$pos"})


def _extend(sig: str, width: int, target: int, signed: bool, wire: str) -> tuple[str, str]:
    """``sig`` (``width`` bits) extended to ``target`` bits as an RTLIL SigSpec, and the RTLIL
    that must precede its use (a wire called ``wire`` holding ``sig``, for a sign bit)."""
    pad = target - width
    if not signed:
        return f"{{ {pad}'{'0' * pad} {sig} }}", ""
    sign = " ".join([f"{wire} [{width - 1}]"] * pad)
    return f"{{ {sign} {wire} }}", f"  wire width {width} {wire}\n  connect {wire} {sig}\n"


def _even_cell(match: re.Match) -> str:
    """A cell with its operands extended to the width Yosys computes it in.

    Yosys' write_verilog prints ``$sub`` of a 4-bit A and a 2-bit B as ``a - b``: the same
    value (Verilog extends ``b`` in context), but Verilator's lint flags every such operand
    (WIDTHEXPAND). Extending the operand in the netlist makes it ``a - { 2'h0, b }``. A
    multi-bit ``!a`` (WIDTHTRUNC) becomes ``a == 0``.
    """
    kind, name, body = match.groups()
    if kind not in _WIDEST_OF_ABY | _WIDEST_OF_AB | _UNARY | {"$logic_not"}:
        return match.group(0)
    params = dict(re.findall(r"^    parameter \\(\w+) (\S+)$", body, re.M))
    connects = dict(re.findall(r"^    connect \\(\w+) (.+)$", body, re.M))
    widths = {port: int(params[f"{port}_WIDTH"]) for port in ("A", "B", "Y") if port in connects}
    signs = {params.get(f"{port}_SIGNED", "0") for port in ("A", "B") if port in widths}
    if len(signs) > 1:  # Verilog computes a mixed pair unsigned, Yosys per operand: leave it
        return match.group(0)
    signed = signs == {"1"}
    if kind == "$logic_not":
        if widths["A"] == 1:
            return match.group(0)
        kind, params["B_SIGNED"], params["B_WIDTH"] = "$eq", "0", str(widths["A"])
        connects["B"] = f"{widths['A']}'{'0' * widths['A']}"
        widths["B"] = widths["A"]
        target = widths["A"]
    elif kind in _WIDEST_OF_AB:
        target = max(widths["A"], widths["B"])
    else:
        target = max(widths.values())
    before = ""
    for port in ("A", "B"):
        if port in widths and widths[port] < target:
            wire = f"{name}$zf_{port.lower()}"
            connects[port], setup = _extend(connects[port], widths[port], target, signed, wire)
            params[f"{port}_WIDTH"] = str(target)
            before += setup
    lines = [f"    parameter \\{key} {value}" for key, value in params.items()]
    lines += [f"    connect \\{key} {value}" for key, value in connects.items()]
    return before + f"  cell {kind} {name}\n" + "\n".join(lines) + "\n  end\n"


def _rtlil(component: wiring.Component, name: str, order: list[str] | None = None) -> str:
    """RTLIL of ``component`` as module ``name``, without ``src`` attributes, its ports numbered
    in ``order`` (default: clock and reset, then the signature's order), operands even.

    Amaranth numbers ports from 0, which Yosys takes for "not a port" and writes last.
    """
    ports = component_ports(component)
    text = rtlil.convert(component, name=name, ports=ports, emit_src=False)
    order = order or [*CLOCK_PORTS, *ports]
    rank = {port: index + 1 for index, port in enumerate(order)}
    start = text.index(f"\nmodule \\{name}\n")
    end = text.index("\nend\n", start)

    def number(match: re.Match) -> str:
        if match.group(4) not in rank:
            raise ValueError(f"module {name}: port {match.group(4)!r} has no place in the order")
        return f"{match.group(1)}{rank[match.group(4)]}{match.group(3)}"

    text = text[:start] + _PORT_WIRE.sub(number, text[start:end]) + text[end:]
    return _CELL.sub(_even_cell, text)


#: Yosys passes after reading the RTLIL: Amaranth's (processes to netlists, memories), but
#: without ``proc``'s closing ``opt_expr``, which turns ``a == 0`` back into ``!a`` (a multi-bit
#: ``!``: Verilator's WIDTHTRUNC); the module's submodules flattened into it; removal of cells
#: and wires nothing reads
_PASSES = (
    "proc -nomux -norom -noopt",
    "memory_collect",
    "flatten",
    "opt_clean -purge",
)


class EmissionError(RuntimeError):
    """Yosys could not turn a module into Verilog; the message is one line naming the module
    and Yosys' last word (e.g. running out of the WebAssembly Yosys' 4 GiB)."""


#: a kind's submodule of more cells than this stays a module of its own: Yosys' ``flatten``
#: copies what it flattens, and a 64-port switch's allocator copied into its switch exhausted
#: the WebAssembly Yosys' 4 GiB (znode-512's: 1.85 million cells then, 394,753 since the
#: arbiters are prefix-OR trees)
FLATTEN_CELLS = 250_000

#: a module's first line in RTLIL
_RTLIL_MODULE = re.compile(r"^module \\(\S+)\n", re.M)


def _keep_big_submodules(text: str, kind: str) -> tuple[str, list[str]]:
    """A kind's RTLIL ``text`` with each submodule of more than :data:`FLATTEN_CELLS` cells
    marked to stay a module, named ``<kind>_<path>`` (``allocator``: ``<kind>_allocator``);
    and those names."""
    starts = [(match.start(), match.group(1)) for match in _RTLIL_MODULE.finditer(text)]
    ends = [start for start, _ in starts[1:]] + [len(text)]
    big = [
        name
        for (start, name), end in zip(starts, ends, strict=True)
        if name != kind and text.count("\n  cell ", start, end) > FLATTEN_CELLS
    ]
    for name in big:
        text = text.replace(f"\\{name} ", f"\\{identifier(name)} ")  # the cell instantiating it
        text = text.replace(
            f"\nmodule \\{name}\n", f"\nattribute \\keep_hierarchy 1\nmodule \\{identifier(name)}\n"
        )
    return text, [identifier(name) for name in big]


def _verilog(rtlil_texts: list[str]) -> str:
    """``write_verilog`` of every module in ``rtlil_texts`` (the top's first), one Yosys run per
    text: the top's with the others as black boxes (their ports only), so that a run holds one
    kind at a time (a 64-port Znode switch's alone fills much of the WebAssembly Yosys' 4 GiB).
    """
    top, *kinds = rtlil_texts
    texts = [_yosys(top, [_black_box(text) for text in kinds])]
    for text in kinds:
        # a kind's run flattens it as its top, then it loses the mark: one (* top *) in all;
        # a big submodule kept out of the flattening loses its mark too
        verilog = _yosys(text, after=["attrmap -modattr -remove top -remove keep_hierarchy"])
        verilog = verilog[verilog.index("\n(*") + 1 :]  # no second banner
        modules = verilog.split("endmodule\n")
        texts.append("endmodule\n".join(_drop_unread(module) for module in modules))
    return "\n".join(texts)


def _black_box(text: str) -> str:
    """The first module of RTLIL ``text`` as a black box: its port wires only."""
    start = text.index("\nmodule ")
    end = text.index("\nend\n", start)
    ports = "".join(f"{match.group(0)}\n" for match in _PORT_WIRE.finditer(text, start, end))
    header = text[start + 1 : text.index("\n", start + 1) + 1]
    return f"attribute \\blackbox 1\n{header}{ports}end\n"


def _yosys(text: str, black_boxes: Sequence[str] = (), after: Sequence[str] = ()) -> str:
    """The Verilog Yosys writes for RTLIL ``text`` after :data:`_PASSES` and ``after``;
    ``black_boxes`` declare the modules it instantiates, which are not written."""
    yosys = find_yosys(lambda version: version >= (0, 40))
    script = [f"read_rtlil <<rtlil\n{part}\nrtlil" for part in [*black_boxes, text]]
    script += [*_PASSES, *after, "write_verilog -norename"]
    try:
        # Yosys warns that not every process becomes Verilog; Amaranth ignores it the same way
        verilog = yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)
    except YosysError as error:
        module = re.search(r"^module \\(\S+)$", text, re.M)
        cells = text.count("\n  cell ")
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = lines[-1] if lines else "no message"
        if "bad_alloc" in str(error):
            reason = f"out of memory ({reason})"
        raise EmissionError(
            f"Yosys failed on module {module.group(1) if module else '?'} ({cells} cells): {reason}"
        ) from None
    return _TRIGGER.sub(r"reg \1 ;\n  initial \1 = 0;", verilog)


#: a wire's declaration, with its attributes (Yosys writes a zero-width wire ``[-1:0]``)
_WIRE = re.compile(r"((?:  \(\*.*\*\)\n)*)  wire (?:\[-?\d+:\d+\] )?(\\\S+ |\w+);\n")
#: a whole-wire continuous assignment on one line
_ASSIGN = re.compile(r"  assign (\\\S+ |\w+) = .*;\n")
_TOKEN = re.compile(r"\\\S+ |[A-Za-z_][\w$]*")
_ATTRIBUTE = re.compile(r"\(\*.*?\*\)")


def _drop_unread(module: str) -> str:
    """Verilog ``module`` without the wires nothing reads.

    Yosys' ``opt_clean -purge`` keeps a named wire that only copies another (Amaranth names
    every field of a struct and every port of a flattened submodule) and zero-width wires (a
    1-VC port's VC number): Verilator flags them (UNUSEDSIGNAL; ASCRANGE for ``[-1:0]``). A
    wire named only by its declaration and at most one ``assign`` to it goes, repeatedly, as
    its source may then be unread too. :func:`emit` leaves the top alone: it only wires
    instances.
    """
    while True:
        uses = Counter(_TOKEN.findall(_ATTRIBUTE.sub("", module)))
        assigned = Counter(match.group(1) for match in _ASSIGN.finditer(module))
        dead = {name for name, count in uses.items() if count == 1}
        dead |= {name for name, count in assigned.items() if count == 1 and uses[name] == 2}
        declared = {match.group(2) for match in _WIRE.finditer(module)}
        dead &= declared
        if not dead:
            return module
        module = _WIRE.sub(lambda m, d=dead: "" if m.group(2) in d else m.group(0), module)
        module = _ASSIGN.sub(lambda m, d=dead: "" if m.group(1) in d else m.group(0), module)


def convert(component: wiring.Component, name: str) -> str:
    """Verilog text of ``component`` as a module called ``name`` (as :func:`emit` writes it).

    Yosys gives every ``always @*`` a dummy ``reg`` initialised to 0 in its declaration, so that
    the block runs once at time 0. Icarus in SystemVerilog mode (``-g2012``, cocotb's default)
    applies declaration initialisers before time 0, without an event, so a block whose inputs
    never change (a route unit behind a register that stays at its reset value) would hold x.
    The initialiser becomes an ``initial`` assignment, which is an event at time 0.
    """
    return _verilog([_rtlil(component, name)])


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
    #: a kind's submodule too big to flatten into it (:data:`FLATTEN_CELLS`) -> the kind
    submodules: dict[str, str] = field(default_factory=dict)
    #: (direction, width, name) per port of the top, in port order (clock and reset left out)
    ports: list[tuple[str, int, str]] = field(default_factory=list)
    #: the top's reset port (:data:`~zfabric.hdl.naming.RESETS`)
    reset: str = "rst"
    seconds: float = 0.0
    #: seconds spent turning the kinds, and the top, into RTLIL
    kind_seconds: float = 0.0
    top_seconds: float = 0.0
    #: seconds Yosys spent writing the Verilog of all of them
    yosys_seconds: float = 0.0
    #: the files :func:`write` wrote, relative to its folder
    files: list[str] = field(default_factory=list)


def top_module_name(plan: FabricPlan) -> str:
    """The top module's name :func:`emit` gives ``plan``'s fabric, and :func:`write` its files
    (``NAME.v``, ...): the plan's name made a Verilog identifier, so callers can check for
    those files before emitting."""
    return identifier(plan.name)


def _kinds(fabric: Fabric, top: str) -> dict[tuple, tuple[str, wiring.Component]]:
    """Kind -> (module name, a component of that kind), for every node, switch and endpoint."""
    switch_id = {id(switch): s for s, switch in enumerate(fabric.switches)}
    in_node = {id(card) for node in fabric.nodes for card in node.cards}
    instances = [("node", n, [switch_id[id(c)] for c in n.cards], 0) for n in fabric.nodes]
    instances += [
        ("switch", sw, [switch_id[id(sw)]], 0) for sw in fabric.switches if id(sw) not in in_node
    ]
    instances += [("endpoint", ep, [], e) for e, ep in enumerate(fabric.endpoints)]
    first: dict[tuple, tuple] = {}
    for what, component, switches, endpoint in instances:
        if component.kind not in first:
            vcs = max((v for s in switches for v in fabric.switches[s].ports.vcs), default=0)
            ident = switches[0] if switches else endpoint
            first[component.kind] = ((what, ident, switches, vcs), component)
    names = kind_names(top, fabric.plan, [entry[0] for entry in first.values()])
    return {
        kind: (name, entry[1]) for (kind, entry), name in zip(first.items(), names, strict=True)
    }


def _header(
    plan: FabricPlan,
    top: str,
    kinds: dict[str, int],
    submodules: dict[str, str],
    reset: str = "rst",
) -> str:
    """The comment heading the file: what was generated, from what, and the top's ports."""
    layout = FlitLayout.from_plan(plan)
    router = plan.router
    vcs = sorted({link.vcs for link in plan.links})
    lines = [
        f"{top}.v: a zfabric fabric (zfabric {version('zfabric')}, Amaranth "
        f"{amaranth.__version__} and its built-in Yosys)",
        "no timestamp or path: the same spec and versions give the same bytes",
        "",
        f"spec: {plan.name}",
        f"topology: {plan.topology} {json.dumps(plan.topology_params, sort_keys=True)}",
        f"  {len(plan.switches)} switches, {len(plan.links)} links, "
        f"{len(plan.endpoints)} endpoints",
        f"routing: {plan.routing.name} {json.dumps(plan.routing.params, sort_keys=True)}",
        f"router: stages {router.stages}, allocator {router.allocator}, "
        f"selection {router.selection}, injection VCs {router.injection_vcs}, "
        f"ejection VCs {router.ejection_vcs}"
        + (f", head_bits {router.head_bits}" if router.head_bits is not None else "")
        + (
            f", switching {router.switching} (packets of at most {router.longest_packet} flits)"
            if router.switching != "wormhole"
            else ""
        ),
        f"flit: {layout.size} bits (kind 2, vc {layout.vc_width}, head {layout.head_width}, "
        f"src {layout.src_width}, payload {layout.payload_width}); "
        f"VCs per link: {', '.join(map(str, vcs))}",
        f"buffer depth: {plan.buffer_depth} flits per input VC",
        f"top: {top}, the only module marked (* top *); modules (instances):"
        if kinds
        else f"top: {top}, one flat module (every switch and endpoint inlined)",
        *(f"  {module} ({count})" for module, count in kinds.items()),
        *(f"  {module} (one in each {kind})" for module, kind in submodules.items()),
        "",
        *port_legend(plan, reset),
    ]
    return "".join(f"// {line}".rstrip() + "\n" for line in lines) + "\n"


def emit(
    plan: FabricPlan, *, name: str | None = None, share: bool = True, reset: str = "rst"
) -> Emission:
    """Verilog of ``plan``'s fabric. ``share``: one module per kind, instantiated per switch
    (else one flat top module, every switch and endpoint inlined). ``reset``: the top's reset
    port (:data:`~zfabric.hdl.naming.RESETS`: ``rst`` active high, or ``aresetn``)."""
    start = time.perf_counter()
    top = identifier(name) if name else top_module_name(plan)
    counts: dict[str, int] = {}
    kinds: dict[tuple, tuple[str, wiring.Component]] = {}

    def wrap(component):
        module = kinds[component.kind][0]
        counts[module] = counts.get(module, 0) + 1
        return BlackBox(component, module)

    fabric = Fabric(
        plan, identity_ports=share, wrap=wrap if share else None, axis=True, reset=reset
    )
    if share:
        kinds.update(_kinds(fabric, top))
    ports = component_ports(fabric)
    order = top_port_order(plan, reset)
    top_start = time.perf_counter()
    parts = [_rtlil(fabric, top, order)]
    top_seconds = time.perf_counter() - top_start
    kind_start = time.perf_counter()
    submodules = {}
    for module, component in kinds.values():
        rtlil_text, big = _keep_big_submodules(_rtlil(component, module), module)
        parts.append(rtlil_text)
        submodules.update(dict.fromkeys(big, module))
    kind_seconds = time.perf_counter() - kind_start
    yosys_start = time.perf_counter()
    text = _verilog(parts)
    yosys_seconds = time.perf_counter() - yosys_start
    counts = {module: counts[module] for module, _ in kinds.values()}
    top_ports = [
        ("input" if ports[port][1] == PortDirection.Input else "output", len(ports[port][0]), port)
        for port in order
        if port in ports and port not in clock_ports(reset)
    ]
    return Emission(
        top=top,
        text=_header(plan, top, counts, submodules, reset) + text,
        kinds=counts,
        submodules=submodules,
        ports=top_ports,
        reset=reset,
        seconds=time.perf_counter() - start,
        kind_seconds=kind_seconds,
        top_seconds=top_seconds,
        yosys_seconds=yosys_seconds,
    )


#: Verilator -Wall warnings the emitted Verilog carries by construction, with the reason; plain
#: ``--lint-only`` (Verilator's default warnings) needs none of them
WAIVERS = {
    "DECLFILENAME": "one file holds every module of the fabric, named after the top only",
    "PROCASSINIT": "Yosys writes a register's power-up value (Amaranth's init) as the "
    "initialiser of its declaration, and its clocked block assigns it",
    "UNUSEDSIGNAL": "bits nothing reads: the carry bits of Amaranth's widened arithmetic, "
    "fields a generic port carries that this module ignores (a flit's VC and spent routing "
    "head at the endpoint, "
    "credits of endpoint-facing outputs, grants of turns no packet takes), and each switch's "
    "overflow flag, which the top leaves unconnected",
}

#: what the one flat module of ``share=False`` (``zfabric verilog --flat``) carries besides:
#: Verilator reports these with its default warnings too
FLAT_WAIVERS = {
    "CMPCONST": "inlined, each switch's identity (its id, its ports' roles) is a constant, and "
    "comparisons of a constant with a value's whole range are constant",
    "UNSIGNED": "comparisons of an unsigned value with a constant zero, of those identities",
}

#: the files :func:`write` writes, after the top's name (``--split`` adds one per module and
#: ``NAME.f``, the list of them)
SUFFIXES = (".v", ".vlt", ".plan.json", ".ports", "_README.md", "_inst.vh", "_tb.v")


def waivers(top: str, files: Sequence[str] | None = None, *, flat: bool = False) -> str:
    """``<top>.vlt``: a Verilator configuration file waiving :data:`WAIVERS` in ``<top>.v``
    (``verilator --lint-only -Wall <top>.vlt <top>.v``), or in each of the module ``files`` of a
    split emission (there each file is named after its module: no DECLFILENAME); ``flat``
    (one inlined module) adds :data:`FLAT_WAIVERS`."""
    files = list(files) if files is not None else [f"{top}.v"]
    lines = ["`verilator_config", f"// {top}.vlt: warnings of -Wall that {top}'s Verilog carries"]
    for rule, reason in (WAIVERS | (FLAT_WAIVERS if flat else {})).items():
        if rule == "DECLFILENAME" and files != [f"{top}.v"]:
            continue
        lines.append(f"// {rule}: {reason}")
        lines += [f'lint_off -rule {rule} -file "*{name}"' for name in files]
    return "\n".join(lines) + "\n"


#: a module of Yosys' output: its attribute lines, ``module NAME(`` ... ``endmodule``
_MODULE = re.compile(r"^((?:\(\*[^\n]*\*\)\n)*)module (\w+)\(.*?^endmodule\n", re.M | re.S)


def split_modules(emission: Emission) -> dict[str, str]:
    """One Verilog text per module, by module name, the top's first: the top's keeps the file's
    header comment, every other starts with a line naming the fabric it belongs to."""
    modules = {}
    for index, match in enumerate(_MODULE.finditer(emission.text)):
        name = match.group(2)
        if index == 0:
            if name != emission.top:
                raise ValueError(f"the first module is {name!r}, not the top {emission.top!r}")
            modules[name] = emission.text[: match.end()]
        else:
            top = emission.top
            intro = f"// {name}.v: a module of the zfabric fabric {top} (see {top}.v)\n\n"
            modules[name] = intro + match.group(0)
    return modules


def write(
    plan: FabricPlan,
    directory: Path,
    *,
    share: bool = True,
    split: bool = False,
    hops: Hops | None = None,
    figures: dict | None = None,
    reset: str = "rst",
) -> Emission:
    """Write into ``directory``: the Verilog, ``<name>.v`` (with ``split``, one ``<module>.v``
    per module instead, the top's being ``<name>.v``, and ``<name>.f`` listing them in compile
    order), its Verilator waivers ``<name>.vlt``, ``<name>.plan.json``, ``<name>.ports``
    (``direction width name`` per top port, in port order), ``<name>_README.md``
    (:func:`~zfabric.hdl.fabric_docs.readme`; ``hops`` and ``figures`` go into it),
    ``<name>_inst.vh`` (an instantiation template) and ``<name>_tb.v`` (a self-checking
    testbench, :func:`~zfabric.hdl.testbench.testbench`), all for the top's reset port
    ``reset`` (:func:`emit`). ``Emission.files`` lists them."""
    emission = emit(plan, share=share, reset=reset)
    top = emission.top
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    texts = {f"{top}.v": emission.text}
    if split:
        texts = {f"{module}.v": text for module, text in split_modules(emission).items()}
        texts[f"{top}.f"] = "".join(f"{name}\n" for name in texts)
    verilog = [name for name in texts if name.endswith(".v")]
    texts[f"{top}.vlt"] = waivers(top, verilog, flat=not share)
    texts[f"{top}.plan.json"] = plan.to_json(indent=1)
    texts[f"{top}.ports"] = "".join(
        f"{d} {w} {n}\n" for d, w, n in with_clock_ports(emission.ports, reset)
    )
    texts[f"{top}_inst.vh"] = instantiation_template(top, emission.ports, reset=reset)
    texts[f"{top}_tb.v"] = testbench(plan, top, emission.ports, reset=reset)
    files = [*texts, f"{top}_README.md"]
    texts[f"{top}_README.md"] = readme(
        plan,
        top,
        emission.text,
        emission.ports,
        hops=hops,
        figures=figures,
        files=files,
        reset=reset,
    )
    for name, text in texts.items():
        (directory / name).write_text(text)
    emission.files = files
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
