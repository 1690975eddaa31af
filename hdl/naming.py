"""Names in the emitted Verilog: the top's ports and their order, and the modules of the kinds.

The top's port names are the members of :class:`~zfabric.hdl.fabric.Fabric` built with
``axis=True``, which takes them, and their order, from :func:`axis_ports` here.

Top ports: ``clk``, the reset (``rst``, active high, or with ``reset="aresetn"`` AXI's
active-low ``aresetn``: :data:`RESETS`), then endpoint by endpoint in endpoint-id order: its
AXI4-Stream input ``s<e>_axis_tvalid``, ``_tready``, ``_tdata``, ``_tlast``, ``_tdest``, then its
AXI4-Stream output per attachment ``a`` it receives through: ``m<e>_axis_tvalid``, ``_tready``,
``_tdata``, ``_tlast``, ``_tid`` (``m<e>_<a>_axis_...`` when endpoints have several attachments).
:func:`axis_name` makes every one of those names.

Modules: ``<top>_sw_p<ports>_v<vcs>`` for a switch kind (ports of the switch, most VCs on a
port), ``<top>_node_p<ports>_v<vcs>`` for a twin node (an nDT node
or a T-switch; ports of its first switch), ``<top>_ep`` for an
endpoint kind (``_a<n>`` with ``n`` > 1 attachments). Kinds that would share a name are told
apart by what differs: a switch's port roles in port order (``d0p`` / ``d0m``: dimension 0,
plus / minus direction; ``local``; ``up``, ``down``, ``side``, ``internal`` with their count), and
when that is equal too (routing tables differ), ``_k<i>``, ``i`` counting the kinds of that name
by their first instance's id. Endpoints share one kind unless their head tables differ: under
``source_destination`` every head carries its source's address, so each endpoint is a kind of
its own, ``<top>_ep_k<e>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from zfabric.plan import FabricPlan

from .flit import dst_width

__all__ = [
    "AXIS_IN",
    "AXIS_OUT",
    "CLOCK_PORTS",
    "RESETS",
    "clock_ports",
    "with_clock_ports",
    "axis_name",
    "axis_ports",
    "output_attachments",
    "identifier",
    "kind_names",
    "port_legend",
    "top_port_order",
]

#: the ports Amaranth gives a module that uses the ``sync`` domain: every kind's module has them,
#: and the top by default
CLOCK_PORTS = ("clk", "rst")

#: the top's reset port, by choice (``zfabric verilog --reset``): its name -> what it is. The
#: kinds' modules keep the active-high ``rst``; an ``aresetn`` top drives it inverted.
RESETS = {
    "rst": "synchronous, active high",
    "aresetn": "synchronous, active low, as AXI's ARESETn",
}


def clock_ports(reset: str = "rst") -> tuple[str, str]:
    """The top's clock and reset ports, first in its port order, for the reset ``reset``."""
    if reset not in RESETS:
        raise ValueError(f"reset must be one of {', '.join(RESETS)}, not {reset!r}")
    return ("clk", reset)


def with_clock_ports(
    ports: Sequence[tuple[str, int, str]], reset: str = "rst"
) -> list[tuple[str, int, str]]:
    """Every port of the top, ``(direction, width, name)`` in port order: the clock and reset,
    then ``ports`` (an :class:`~zfabric.hdl.verilog.Emission`'s, which leaves them out)."""
    return [("input", 1, name) for name in clock_ports(reset)] + list(ports)


def identifier(name: str) -> str:
    """``name`` as a plain Verilog identifier (a spec name like ``torus-4x4``)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return ident if re.match(r"[A-Za-z_]", ident) else f"zf_{ident}"


#: the members of an endpoint's AXI4-Stream input, in port order
AXIS_IN = ("tvalid", "tready", "tdata", "tlast", "tdest")
#: the members of each of an endpoint's AXI4-Stream outputs, in port order
AXIS_OUT = ("tvalid", "tready", "tdata", "tlast", "tid")


def axis_name(
    endpoint: int, signal: str, attachment: int | None = None, *, attachments: int = 1
) -> str:
    """The top-level port name of ``signal`` (an :data:`AXIS_IN` or :data:`AXIS_OUT` member) of
    ``endpoint``: its input stream ``s<e>_axis_<signal>`` (``attachment`` None), or the output
    stream of ``attachment``: ``m<e>_axis_<signal>`` when every endpoint has one attachment
    (``attachments`` 1), else ``m<e>_<a>_axis_<signal>``.

    The one place these names are made: the Verilog top, its port list, the cosim bench and the
    generated README, template and testbench all call it.
    """
    if not isinstance(endpoint, int) or endpoint < 0:
        raise TypeError(f"endpoint must be a non-negative integer, not {endpoint!r}")
    if not isinstance(attachments, int) or attachments < 1:
        raise TypeError(f"attachments must be a positive integer, not {attachments!r}")
    if attachment is None:
        if signal not in AXIS_IN:
            raise ValueError(f"an input stream has no {signal!r}; it has {', '.join(AXIS_IN)}")
        return f"s{endpoint}_axis_{signal}"
    if signal not in AXIS_OUT:
        raise ValueError(f"an output stream has no {signal!r}; it has {', '.join(AXIS_OUT)}")
    if not isinstance(attachment, int) or not 0 <= attachment < attachments:
        raise ValueError(
            f"attachment must be an integer in 0..{attachments - 1}, not {attachment!r}"
        )
    if attachments == 1:
        return f"m{endpoint}_axis_{signal}"
    return f"m{endpoint}_{attachment}_axis_{signal}"


def output_attachments(plan: FabricPlan) -> tuple[int, ...]:
    """The attachments an endpoint has an output stream for: those it receives through (an
    attachment that only injects, as a Transit processor's inputs, has none). Every endpoint
    of a plan has the same ones."""
    if not plan.endpoints:
        return (0,)
    found = {tuple(a for a in range(len(e.attachments)) if e.ejects(a)) for e in plan.endpoints}
    if len(found) != 1:
        raise ValueError(f"endpoints differ in the attachments they receive through: {found}")
    return found.pop()


def axis_ports(plan: FabricPlan) -> list[tuple[str, int, str]]:
    """``(direction, width, name)`` of every endpoint port of ``plan``'s Verilog top, in port
    order (after ``clk`` and ``rst``): endpoint by endpoint in id order, its input stream
    (:data:`AXIS_IN`), then its output streams attachment by attachment (:data:`AXIS_OUT`;
    :func:`output_attachments`). ``tdata`` is ``flit_width`` bits, ``tdest`` and ``tid`` an
    endpoint id's bits."""
    attachments = len(plan.endpoints[0].attachments) if plan.endpoints else 1
    outputs = output_attachments(plan)
    widths = {"tdata": plan.flit_width, "tdest": dst_width(plan), "tid": dst_width(plan)}
    ins = {"tready": "output"}
    outs = {"tvalid": "output", "tdata": "output", "tlast": "output", "tid": "output"}
    ports = []
    for e in range(len(plan.endpoints)):
        for signal in AXIS_IN:
            ports.append((ins.get(signal, "input"), widths.get(signal, 1), axis_name(e, signal)))
        for a in outputs:
            for signal in AXIS_OUT:
                name = axis_name(e, signal, a, attachments=attachments)
                ports.append((outs.get(signal, "input"), widths.get(signal, 1), name))
    return ports


def top_port_order(plan: FabricPlan, reset: str = "rst") -> list[str]:
    """The top's ports in emission order: ``clk``, the reset, then :func:`axis_ports`."""
    return [*clock_ports(reset), *(name for _, _, name in axis_ports(plan))]


def port_legend(plan: FabricPlan, reset: str = "rst") -> list[str]:
    """The lines of the Verilog header that explain the top's ports (docs/rtl.md)."""
    attachments = len(plan.endpoints[0].attachments) if plan.endpoints else 1
    out = "m<e>_<a>_axis" if attachments > 1 else "m<e>_axis"  # as axis_name makes them
    width = dst_width(plan)
    outputs = output_attachments(plan)
    receiving = (
        "" if len(outputs) == attachments else f" that receives ({', '.join(map(str, outputs))})"
    )
    return [
        f"ports: clk, {reset} (reset {RESETS[reset]}), then per endpoint e in id order an",
        "AXI4-Stream input, then an AXI4-Stream output per attachment"
        + (" a" if attachments > 1 else "")
        + receiving
        + ":",
        f"  s<e>_axis_tvalid, _tready, _tdata[{plan.flit_width - 1}:0], _tlast, "
        f"_tdest[{width - 1}:0]: packets into endpoint e",
        f"  {out}_tvalid, _tready, _tdata[{plan.flit_width - 1}:0], _tlast, _tid[{width - 1}:0]:"
        " packets out",
        "  a packet is the beats up to and including the one with tlast; tdest (the destination",
        "  endpoint, not e itself) is read on its first beat; tid is the source endpoint;",
        "  tdata is all data on every beat; tready low on an output holds packets back",
    ]


def _port_roles(plan: FabricPlan, switches: Sequence[int]) -> str:
    """The port roles of ``switches`` (one or two nDT cards) in port order, as name parts."""
    parts = []
    for s in switches:
        labels = []
        for port in plan.switches[s].ports:
            if port.role == "external":
                labels.append(f"d{port.dim}{'p' if port.sign > 0 else 'm'}")
            elif labels and re.fullmatch(rf"{port.role}\d*", labels[-1]):
                count = labels[-1][len(port.role) :]
                labels[-1] = f"{port.role}{int(count or 1) + 1}"
            else:
                labels.append(port.role)
        parts.append("_".join(labels))
    return "__".join(parts)


def kind_names(
    top: str, plan: FabricPlan, kinds: Sequence[tuple[str, int, Sequence[int], int]]
) -> list[str]:
    """One module name per kind, stable across runs and independent of emission order.

    ``kinds``: per kind ``(what, first, switches, vcs)``: ``what`` is ``"switch"``, ``"node"``
    or ``"endpoint"``, ``first`` the plan id of its first instance (switch id; for a node its
    first card; endpoint id), ``switches`` the switch ids of that instance (empty for an
    endpoint) and ``vcs`` the most VCs on one of its ports.
    """
    bases = []
    for what, first, switches, vcs in kinds:
        if what == "endpoint":
            n = len(plan.endpoints[first].attachments)
            bases.append(f"{top}_ep" + (f"_a{n}" if n > 1 else ""))
        else:
            prefix = "sw" if what == "switch" else "node"
            radix = len(plan.switches[switches[0]].ports)
            bases.append(f"{top}_{prefix}_p{radix}_v{vcs}")
    names = list(bases)
    for i, (what, _first, switches, _vcs) in enumerate(kinds):
        if bases.count(bases[i]) > 1 and what != "endpoint":
            names[i] = f"{bases[i]}_{_port_roles(plan, switches)}"
    order = sorted(range(len(kinds)), key=lambda i: (kinds[i][0], kinds[i][1]))
    seen: dict[str, int] = {}
    final = list(names)
    for i in order:
        if names.count(names[i]) > 1:
            final[i] = f"{names[i]}_k{seen.get(names[i], 0)}"
            seen[names[i]] = seen.get(names[i], 0) + 1
    return final
