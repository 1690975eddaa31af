"""The files beside a fabric's Verilog that a designer reads or copies: ``NAME_README.md`` and
the instantiation template ``NAME_inst.vh``.

Both are written from the :class:`~zfabric.hdl.verilog.Emission` (its header comment and the
top's port list), so they name the ports the top really has; the latency formula is
:meth:`~zfabric.router_settings.RouterSettings.zero_load_latency`'s, evaluated, never written
out a second time. Resource and Fmax figures appear only when the caller has them (the JSON of
``zfabric synth --json``): emitting Verilog never runs synthesis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zfabric.plan import FabricPlan
from zfabric.router_settings import RouterSettings

from .naming import RESETS, clock_ports, with_clock_ports

__all__ = ["Hops", "instantiation_template", "latency_formula", "readme"]


@dataclass(frozen=True)
class Hops:
    """The fabric's routes: their switch-to-switch links (``zfabric check``'s figures:
    ``FabricMetrics.routes``, diameter and average over the pairs' shortest and over their
    longest routes) and the zero-load latency of a lone one-flit packet along the first choices
    it takes, head flits included (``zfabric.sim.analytic.lone_packet_latency``, held equal to
    the model)."""

    routes: Mapping[str, Mapping[str, float]]
    longest_latency: float
    mean_latency: float

    def text(self) -> str:
        """The routes' lengths in words; both kinds, labelled, when routing choices differ."""
        shortest, longest = self.routes["shortest"], self.routes["longest"]
        if shortest == longest:
            diameter = int(longest["diameter"])
            return (
                f"This fabric's routes cross at most {diameter} link{'s' * (diameter != 1)}"
                f" ({longest['average']:.3f} on average over ordered pairs of endpoints)"
            )
        return (
            "This fabric's routing chooses among routes of different lengths: each pair's"
            f" shortest route crosses at most {int(shortest['diameter'])} links"
            f" ({shortest['average']:.3f} on average over ordered pairs of endpoints), its"
            f" longest at most {int(longest['diameter'])} ({longest['average']:.3f} on average)"
        )


def latency_formula(router: RouterSettings) -> str:
    """The zero-load latency of a packet of L flits over H links, as the README writes it:
    ``per_hop·H + L + constant`` (less S, the switches it goes straight through, under the
    straight bypass), or under store-and-forward switching (L − 1 more at each of
    the H + 1 switches) ``(L + stages)·(H + 1) + L``; read off
    :meth:`RouterSettings.zero_load_latency` and checked against it at two more points."""
    f = router.zero_load_latency
    if router.bypasses:  # S: the switches the packet goes straight through
        per_hop, constant = int(f(1, 1) - f(0, 1)), int(f(0, 1) - 1)
        text = f"{per_hop}·H + L + {constant} − S"
        checks = ((0, 1, 0), (1, 1, 0), (2, 3, 1), (5, 4, 3))
        if any(f(h, n, straight=s) != per_hop * h + n + constant - s for h, n, s in checks):
            raise ValueError(f"zero-load latency of {router!r} is not {text}")
        return text
    if router.stores:
        text, formula = (
            f"(L + {router.stages})·(H + 1) + L",
            lambda h, n: (n + router.stages) * (h + 1) + n,
        )
    else:
        per_hop, constant = int(f(1, 1) - f(0, 1)), int(f(0, 1) - 1)
        text, formula = f"{per_hop}·H + L + {constant}", lambda h, n: per_hop * h + n + constant
    if any(f(h, n) != formula(h, n) for h, n in ((0, 1), (1, 1), (2, 3), (5, 4))):
        raise ValueError(f"zero-load latency of {router!r} is not {text}")
    return text


def _header(text: str) -> list[str]:
    """The Verilog's header comment, without its first two lines (file name, reproducibility)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[3:])
    body = lines[2:]
    while body and not body[0]:
        body.pop(0)
    return body


def _describe(top: str, name: str) -> str:
    """What the file ``name`` written beside the Verilog of ``top`` holds."""
    what = {
        f"{top}.v": "the Verilog (the top, and every module unless split)",
        f"{top}.f": "the Verilog files in compile order",
        f"{top}.vlt": "Verilator waivers for `-Wall`, each with its reason",
        f"{top}.plan.json": "the compiled plan the Verilog was generated from",
        f"{top}.ports": "direction, width and name of every port of the top, in port order",
        f"{top}_inst.vh": "an instantiation template to `include inside a module",
        f"{top}_tb.v": "the self-checking testbench",
        f"{top}_README.md": "this file",
    }
    return what.get(name, "a module of the Verilog")


def _figures_section(figures: dict) -> list[str]:
    """Markdown of a ``zfabric synth --json`` report: cells per module kind and in total."""
    conditions = figures.get("conditions", {})
    names = list(figures["total"])
    fmax = any(kind.get("fmax_median_mhz") is not None for kind in figures["kinds"])
    head = ["module", "instances", *names] + (["Fmax MHz (median)"] if fmax else [])
    rows = []
    for kind in figures["kinds"]:
        row = [f"`{kind['module']}`", str(kind["instances"])]
        row += [str(kind["cells"][name]) for name in names]
        if fmax:
            median = kind.get("fmax_median_mhz")
            row.append("" if median is None else f"{median:.1f}")
        rows.append(row)
    rows.append(["whole fabric", "", *(str(figures["total"][name]) for name in names)])
    if fmax:
        rows[-1].append("")
    lines = [
        f"From `zfabric synth --json` on device {conditions.get('device', '?')}"
        f" ({conditions.get('synthesis', 'synthesis conditions not given')}"
        + (f"; Fmax: {conditions['fmax']}" if conditions.get("fmax") else "")
        + ").",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def readme(
    plan: FabricPlan,
    top: str,
    text: str,
    ports: Sequence[tuple[str, int, str]],
    *,
    hops: Hops | None = None,
    figures: dict | None = None,
    files: Sequence[str] = (),
    reset: str = "rst",
) -> str:
    """``NAME_README.md``: what the fabric is, its ports in order, its zero-load latency, its
    figures when known, and how to run its testbench.

    ``text`` is the emitted Verilog (its header comment is quoted), ``ports`` the top's ports
    (``Emission.ports``), ``files`` the files written beside it, ``reset`` the top's reset
    port."""
    clock, reset_port = clock_ports(reset)
    formula = latency_formula(plan.router)
    stages = plan.router.stages
    lines = [
        f"# {top}: a zfabric fabric",
        "",
        f"Generated by `zfabric verilog` from the spec `{plan.name}`: {len(plan.switches)} "
        f"switches, {len(plan.endpoints)} endpoints. Top module: `{top}`.",
        "",
        "## What was generated",
        "",
        "The header comment of the Verilog, which also gives the packet format:",
        "",
        "```",
        *_header(text),
        "```",
        "",
        "## Ports",
        "",
        f"In port order: `{clock}`, `{reset_port}` (reset, {RESETS[reset]}), "
        "then endpoint by endpoint in id order (as in `" + top + ".ports`):",
        "",
        "| port | direction | width |",
        "|---|---|---|",
        *(
            f"| `{name}` | {direction} | {width} |"
            for direction, width, name in with_clock_ports(ports, reset)
        ),
        "",
        "## Latency",
        "",
        f"With `router.stages: {stages}`, a packet of L flits whose route crosses H "
        "switch-to-switch links, alone in the fabric and with the output's ready high, is "
        f"delivered **{formula} cycles** after it is offered "
        "(docs/microarchitecture.md, Consequences: one cycle to inject, stages + 1 cycles per "
        "switch for H + 1 switches, L − 1 cycles of serialisation"
        + (
            f"; under `router.switching: {plan.router.switching}` each switch routes a head only"
            " once its whole packet is in, L − 1 cycles more per switch"
            if plan.router.stores
            else ""
        )
        + (
            "; under `router.bypass: straight` S is the number of switches the route goes"
            " straight through, one dimension and direction in and out, each crossed in the"
            " cycle the flit arrives (H − D for dimension order over D dimensions)"
            if plan.router.bypasses
            else ""
        )
        + ").",
    ]
    depth, period = plan.buffer_depth, plan.router.credit_period
    if depth < period:
        lines[-1] += (
            f" That holds for L ≤ {depth} (the buffer depth): a longer packet streams at"
            f" {depth}/{period} flits per cycle, as a credit lets the next flit follow {period}"
            f" cycles after it was spent, and takes ⌊(L − 1)/{depth}⌋·{period - depth} cycles"
            " more (docs/microarchitecture.md, Streaming)."
        )
    if plan.router.switching != "wormhole":
        lines[-1] += (
            f" Under `router.switching: {plan.router.switching}` every packet must be at most"
            f" {plan.router.longest_packet} flits long (`packet_length`): a switch knows no"
            " packet's length and takes every one as that long, so it cannot refuse a longer"
            " one; "
            + (
                "such a packet never lies whole in a buffer, and the fabric stalls."
                if plan.router.stores
                else "such a packet may block across several switches, as under wormhole."
            )
        )
    if plan.router.head_bits is not None:
        lines[-1] += (
            f" With `router.head_bits: {plan.router.head_bits}` a routing head of h bits"
            f" travels as H_f = ⌈h/{plan.router.head_bits}⌉ head flits, which add H_f − 1 cycles"
            " at each of the H + 1 switches (H_f at that switch's input) and H_f − 1 on the"
            " ejection link (docs/microarchitecture.md, Heads longer than a flit)."
        )
    if hops is not None:
        heads = ", its head flits included" if plan.router.head_bits is not None else ""
        lines += [
            "",
            f"{hops.text()}: a lone one-flit packet, taking its routing's first choices, is"
            f" delivered in {hops.longest_latency:g} cycles at most, {hops.mean_latency:.2f} on"
            f" average{heads}.",
        ]
    lines += ["", "## Resources and Fmax", ""]
    if figures is None:
        lines.append(
            "Not measured here (emitting Verilog runs no synthesis): `zfabric synth SPEC "
            "[--fmax] --json > figures.json` measures them, and `zfabric verilog SPEC "
            "--figures figures.json` puts them in this file."
        )
    else:
        lines += _figures_section(figures)
    lines += [
        "",
        "## Files",
        "",
        *(f"- `{name}`: {_describe(top, name)}" for name in files),
        "",
        "## Testbench",
        "",
        f"`{top}_tb.v` sends a packet from every endpoint to every other, checks that every beat "
        "arrives intact at the right endpoint, and prints `PASS` or `FAIL` (with what went "
        "wrong) before `$finish`. With Icarus Verilog:",
        "",
        "```sh",
        f"iverilog -g2012 -o {top}_tb.vvp {top}_tb.v "
        + (f"-c {top}.f" if f"{top}.f" in files else f"{top}.v"),
        f"vvp {top}_tb.vvp",
        "```",
        "",
    ]
    return "\n".join(lines)


def instantiation_template(
    top: str, ports: Sequence[tuple[str, int, str]], *, reset: str = "rst"
) -> str:
    """``NAME_inst.vh``: a net per endpoint port and an instance of ``top`` connecting them and
    the enclosing module's ``clk`` and reset (``rst``, or ``aresetn`` with that ``reset``), to
    ```include`` inside a module (or paste and rename). A ``.vh``, not a ``.v``: it is no
    module, so ``*.v`` globs leave it out."""
    every = with_clock_ports(ports, reset)
    pad = max(len(name) for _, _, name in every)
    lines = [
        f"// {top}_inst.vh: an instance of {top}, with one net per port named like the port.",
        f"// `include it inside your module, whose {' and '.join(clock_ports(reset))} it"
        " connects (or paste it and",
        f"// rename), and connect the nets; {top}.v (its header comment) and the README say"
        " what each",
        "// port carries.",
        "",
    ]
    for _, width, name in ports:
        bits = f"[{width - 1}:0]" if width > 1 else ""
        lines.append(f"wire {bits:8} {name};")
    lines += ["", f"{top} u_{top} ("]
    for index, (direction, width, name) in enumerate(every):
        comma = "," if index < len(every) - 1 else " "
        bits = f"{width} bit{'s' * (width > 1)}"
        lines.append(f"    .{name:{pad}} ({name:{pad}}){comma} // {direction}, {bits}")
    lines += [");", ""]
    return "\n".join(lines)
