"""The unit proofs of every distinct switch kind of a plan (``zfabric prove``).

The endpoints' receive side is one more kind (the ejection VCs and the buffer depth), with
the harness of :mod:`zfabric.hdl.formal.endpoint`.

A switch's units are configured by its ports' VC counts, the buffer depth and the router
settings (and the allocator by the turns its routes take): switches alike in those are one
*proof kind*, whatever their routing tables (which the unit harnesses do not read). Each kind
gets the harnesses of :mod:`zfabric.hdl.formal` at its configuration: its input units (one per
distinct input VC count), output units (one per distinct output VC count) and allocator, and
the route units of its switches are checked against the routing function (one property per
kind, :mod:`zfabric.hdl.formal.route`). A property shared by several kinds (the same input
unit, say) is proven once.

Each property is proven by k-induction when its harness is inductive (``prove``), by one step
from reset for every input when it has no state (the route units), or checked from reset to
``depth`` cycles (``bmc``). Every solver run has a time limit: a proof that does not finish in
it falls back to bounded model checking, and a bounded check that does not reach ``depth``
reports the depth it did reach, so a kind too large for the solver says so instead of hanging.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zfabric.plan import FabricPlan

from ..flit import built_head_flits, credit_width, surplus_head_flits
from ..router.route import RouteRows
from ..switch import Switch
from .allocator import AllocatorHarness
from .endpoint import EndpointHarness
from .injection import InjectionHarness
from .input_unit import InputUnitHarness
from .output_unit import OutputUnitHarness
from .route import RouteHarness
from .sby import run_sby

__all__ = [
    "EndpointKind",
    "ProofKind",
    "Property",
    "Outcome",
    "proof_kinds",
    "default_depth",
    "prove",
]

#: k of the k-induction per inductive harness: the smallest k that closes, plus one
INDUCTION_DEPTH = {
    "input counts": 4,
    "input order": 2,
    "output credits": 2,
    "allocator grants": 3,
    "ownership": 2,
    "endpoint buffers": 2,
    "endpoint presentation": 2,
    "endpoint injection": 2,
}
#: the note of a combinational check's outcome (proven by one step from reset)
COMBINATIONAL = "combinational"
#: the endpoint's presentation check if its induction does not close in time: each cycle past
#: this one roughly doubles the solver's time (2 ejection VCs, B = 4: 72 s at 10 cycles on the
#: 2-core development machine)
ENDPOINT_DEPTH = 10


@dataclass(frozen=True)
class ProofKind:
    """The unit configuration shared by some switches (``switches``: their names)."""

    in_vcs: tuple[int, ...]
    out_vcs: tuple[int, ...]
    buffer_depth: int
    turns: frozenset
    selection: str
    iterations: int
    pipelined: bool
    split: bool = False
    one_port: bool = False
    #: per output VC, its priority level (occupancy selection only; else empty)
    levels: tuple[int, ...] = ()
    vc_split: bool = False
    #: surplus head flits an input pops with a head (sliced heads of several flits), and per
    #: output port the bits of the credit count it receives (1: a pulse)
    max_skip: int = 0
    out_credit: tuple[int, ...] = ()
    #: per output port, per VC: taken only when empty (an adaptive VC; empty: none is)
    out_atomic: tuple[tuple[bool, ...], ...] = ()
    #: the credits an output VC needs to be free (the longest packet under cut-through and
    #: store-and-forward; 0: wormhole), and whether inputs count the packet ends they hold
    out_whole: int = 0
    count_ends: bool = False
    #: bubble flow control: per input port, the output VCs (flat) a head enters a ring on, and
    #: per output port the credits entering it needs (0: no ring's); empty without bubbles
    entering: tuple[int, ...] = ()
    out_entering: tuple[int, ...] = ()
    #: the input units keep their VCs' data in one RAM (InputUnit's ``shared_data``)
    shared_data: bool = True
    #: the straight bypass: per input port the output port it feeds straight, or -1 (empty:
    #: none)
    straight: tuple[int, ...] = ()
    switches: tuple[str, ...] = field(compare=False, default=())
    #: the switches' indices and the plan's route rows, for the route units' proof
    ids: tuple[int, ...] = field(compare=False, default=())
    rows: RouteRows | None = field(compare=False, default=None, repr=False)

    @property
    def label(self) -> str:
        """``5 ports, VCs in 1,2,2,2,2 / out 2,2,2,2,2, B=4, round-robin``."""
        text = (
            f"{len(self.in_vcs)} ports, VCs in {','.join(map(str, self.in_vcs))}"
            f" / out {','.join(map(str, self.out_vcs))}, {len(self.turns)} turns,"
            f" B={self.buffer_depth}, {self.selection}"
        )
        if self.iterations > 1:
            text += f", {self.iterations} iterations"
        if self.pipelined:
            text += ", VC allocation in its own stage"
        if self.split:
            text += ", switch allocation in two cycles"
        if self.vc_split:
            text += ", VC allocation in two cycles"
        if self.one_port:
            text += ", one-port candidates"
        if self.max_skip:
            text += f", heads pop up to {self.max_skip} surplus head flits"
        if self.straight:
            text += ", straight bypass"
        return text


@dataclass(frozen=True)
class EndpointKind:
    """The receive and injection sides shared by all endpoints (``switches``: their names, for
    the report)."""

    ejection_vcs: int
    buffer_depth: int
    switches: tuple[str, ...] = field(compare=False, default=())
    injection_vcs: int = 1
    #: head flits of every packet (router.head_bits, heads that keep their length), sent and
    #: stripped; the most head flits of a packet whose count varies (sliced), sent only (they
    #: arrive as one), or 0; the bits of the injection link's credit count
    head_flits: int = 1
    varying: int = 0
    credit_width: int = 1

    @property
    def label(self) -> str:
        vcs = f"{self.ejection_vcs} ejection VC{'s' if self.ejection_vcs > 1 else ''}"
        inject = f"{self.injection_vcs} injection VC{'s' if self.injection_vcs > 1 else ''}"
        text = f"endpoint receive and injection sides, {vcs}, {inject}, B={self.buffer_depth}"
        if self.head_flits > 1:
            text += f", {self.head_flits} head flits"
        if self.varying:
            text += f", 1 to {self.varying} head flits sent"
        return text


def proof_kinds(plan: FabricPlan) -> list[ProofKind | EndpointKind]:
    """The distinct unit configurations of ``plan``'s switches (twin-node cards included), in
    order of their first switch, then the endpoints' receive side."""
    rows = RouteRows(plan)
    kinds: dict[ProofKind, list[int]] = {}
    for s in range(len(plan.switches)):
        switch = Switch.from_plan(plan, s, rows=rows)
        alloc = switch.allocator
        kind = ProofKind(
            in_vcs=tuple(unit._n_vcs for unit in switch.input_units),
            out_vcs=tuple(unit._n_vcs for unit in switch.output_units),
            buffer_depth=plan.buffer_depth,
            turns=alloc._turns,
            selection=alloc._selection,
            iterations=alloc._iterations,
            pipelined=alloc._pipelined,
            split=alloc._split,
            one_port=alloc._one_port,
            levels=alloc._levels if alloc._selection == "occupancy" else (),
            vc_split=alloc._vc_split,
            max_skip=switch.input_units[0]._max_skip,
            shared_data=switch.input_units[0]._shared_data,
            out_credit=tuple(unit.link.signature.credit_width for unit in switch.output_units),
            out_atomic=tuple(unit._atomic for unit in switch.output_units),
            out_whole=switch.output_units[0]._whole,
            count_ends=switch.input_units[0]._count_ends,
            entering=alloc._entering,
            out_entering=tuple(unit._entering for unit in switch.output_units)
            if alloc._entering
            else (),
            straight=alloc._straight,
        )
        kinds.setdefault(kind, []).append(s)
        # the units were built to read their configuration only: no "created but never used"
        parts = (switch, alloc, *switch.input_units, *switch.output_units)
        for part in (*parts, *switch.route_units.values()):
            part._MustUse__used = True
    surplus = surplus_head_flits(plan)
    endpoints = EndpointKind(
        plan.router.ejection_vcs,
        plan.buffer_depth,
        tuple(e.name for e in plan.endpoints),
        plan.router.injection_vcs,
        head_flits=built_head_flits(plan),
        varying=1 + surplus if surplus else 0,
        credit_width=credit_width(plan),
    )
    return [
        ProofKind(
            **{
                **kind.__dict__,
                "switches": tuple(plan.switches[s].name for s in ids),
                "ids": tuple(ids),
                "rows": rows,
            }
        )
        for kind, ids in kinds.items()
    ] + [endpoints]


def default_depth(plan: FabricPlan) -> int:
    """Two credit round trips and a whole packet: a flit's credit comes back B + 3 cycles after
    it is sent at the earliest (written, popped, pulse, counted) when the buffer is full."""
    return 2 * (plan.buffer_depth + 3) + plan.packet_length


@dataclass(frozen=True)
class Property:
    """One property of one unit configuration: ``make()`` builds its harness."""

    unit: str
    name: str
    statement: str
    inductive: str | None  # the INDUCTION_DEPTH key when k-induction can close it
    make: Callable = field(compare=False, hash=False)
    key: tuple = ()  # what identifies the proof (shared between kinds)
    max_depth: int | None = None  # a bound the solver manages, if below the one asked
    #: no state: one step from reset checks every input (a route unit)
    combinational: bool = False


def _endpoint_properties(kind: EndpointKind) -> list[Property]:
    n, b, m = kind.ejection_vcs, kind.buffer_depth, kind.injection_vcs
    h, varying, width = kind.head_flits, kind.varying, kind.credit_width
    unit = f"endpoint ({n} VC{'s' if n > 1 else ''}, B={b}" + (f", H={h})" if h > 1 else ")")
    tag_width = b.bit_length() + 1
    behind = f"{h - 1} head flit{'s' if h > 2 else ''}"  # behind each first flit
    if h == 1:
        presentation = (
            "one packet presented at a time, kept until its tail is taken; every flit presented "
            "once, in order, unchanged until taken; a credit back per flit taken"
        )
    else:
        presentation = (
            "one packet presented at a time, kept until its tail is taken; the first flit's "
            "payload shown as the first beat, the beats once, in order, unchanged until taken; "
            f"the {behind} behind the first never shown; a credit back per flit "
            "taken, shown or hidden"
        )
    sent = (
        f"; {behind} after each first flit"
        if h > 1
        else f"; 1 to {varying} head flits per packet, credit counts"
        if varying
        else ""
    )
    return [
        Property(
            unit,
            "buffers",
            "per ejection VC: switch credits + flits in the receive buffer = B (no overflow)",
            "endpoint buffers",
            lambda: EndpointHarness(ejection_vcs=n, buffer_depth=b, head_flits=h, state=True),
            ("endpoint buffers", n, b, h),
        ),
        Property(
            unit,
            "presentation",
            presentation,
            "endpoint presentation",
            lambda: EndpointHarness(
                ejection_vcs=n,
                buffer_depth=b,
                tag_width=tag_width,
                check="presentation",
                state=True,
                head_flits=h,
            ),
            ("endpoint presentation", n, b, h),
            max_depth=ENDPOINT_DEPTH,
        ),
        Property(
            f"injection ({m} VC{'s' if m > 1 else ''}, B={b})",
            "injection",
            "(one attachment, destination heads) per VC: credits + link + switch buffer = B; "
            "each flit is the beat taken, its head the destination; a head only between "
            "packets, the other flits on their head's VC" + sent,
            "endpoint injection",
            lambda: InjectionHarness(
                injection_vcs=m,
                buffer_depth=b,
                head_flits=varying or h,
                varying=bool(varying),
                credit_width=width,
                state=True,
            ),
            ("endpoint injection", m, b, h, varying, width),
        ),
    ]


def properties(kind: ProofKind | EndpointKind) -> list[Property]:
    """The properties of one kind's units."""
    if isinstance(kind, EndpointKind):
        return _endpoint_properties(kind)
    b = kind.buffer_depth
    tag_width = max(4, b.bit_length() + 1)  # sequence numbers tell a buffer's flits apart
    found = []
    skip = kind.max_skip
    shared = kind.shared_data
    for n in sorted(set(kind.in_vcs)):
        unit = (
            f"input unit ({n} VC{'s' if n > 1 else ''}, B={b}"
            + (f", pops of up to {1 + skip}" if skip else "")
            + ("" if shared else ", data in each VC's FIFO")
            + ")"
        )
        found += [
            Property(
                unit,
                "counts",
                "per VC: level in 0..B and = written - popped, no overflow or underflow, "
                "sender credits + credits on the link + level = B"
                + (" (a pop of 1 + skip entries returns as many credits at once)" if skip else ""),
                "input counts",
                lambda n=n: InputUnitHarness(
                    n_vcs=n, buffer_depth=b, max_skip=skip, shared_data=shared
                ),
                ("input counts", n, b, skip, shared),
            ),
            Property(
                unit,
                "order",
                "every flit leaves once, unmodified, in the order it came (sequence tags)"
                + ("; a pop's last_tail is the last entry's tail bit" if skip else "")
                + ("; ends = the FIFO holds a tail" if kind.count_ends else ""),
                "input order",
                lambda n=n: InputUnitHarness(
                    n_vcs=n,
                    buffer_depth=b,
                    order=True,
                    state=True,
                    payload_width=tag_width,
                    max_skip=skip,
                    shared_data=shared,
                    count_ends=kind.count_ends,
                ),
                ("input order", n, b, skip, shared, kind.count_ends),
            ),
        ]
    widths = kind.out_credit or (1,) * len(kind.out_vcs)
    atomics = kind.out_atomic or ((),) * len(kind.out_vcs)
    enterings = kind.out_entering or (0,) * len(kind.out_vcs)
    outputs = sorted(set(zip(kind.out_vcs, widths, atomics, enterings, strict=True)))
    for n, width, atomic, entering in outputs:
        unit = f"output unit ({n} VC{'s' if n > 1 else ''}, B={b}"
        if width > 1:
            unit += f", credit counts of {width} bits"
        if atomic:
            adaptive = ",".join(str(vc) for vc, a in enumerate(atomic) if a)
            unit += f", VC {adaptive} free only when empty"
        if kind.out_whole:
            unit += f", free only with {kind.out_whole} credits"
        if entering:
            unit += f", a ring entered with {entering}"
        unit += ")"
        found.append(
            Property(
                unit,
                "credits and owners",
                "per VC: receiver holds <= B, credits + link + held = B, ready = credit != 0, "
                + ("spare2 and keep2 = two credits next cycle, " if kind.split else "")
                + "owner set by a head (or acquire), released by the tail"
                + (", an adaptive VC free only with every credit home" if atomic else "")
                + (f", free only with {kind.out_whole} credits" if kind.out_whole else "")
                + (f", free2 only with {entering} credits" if entering else ""),
                "output credits",
                lambda n=n, width=width, atomic=atomic, entering=entering: OutputUnitHarness(
                    n_vcs=n,
                    buffer_depth=b,
                    acquire=kind.pipelined,
                    second=kind.split,
                    credit_width=width,
                    atomic=atomic,
                    whole=kind.out_whole,
                    entering=entering,
                    state=True,
                ),
                ("output", n, b, kind.pipelined, kind.split, width, atomic, kind.out_whole)
                + ((entering,) if entering else ()),
            )
        )
    settings = {
        "in_vcs": kind.in_vcs,
        "out_vcs": kind.out_vcs,
        "turns": kind.turns,
        "selection": kind.selection,
        "iterations": kind.iterations,
        "pipelined": kind.pipelined,
    }
    if kind.levels:
        settings["levels"] = kind.levels
    if kind.one_port:  # the switch builds the one-port allocator: prove that one
        settings["one_port"] = True
    if kind.split:  # the harness keeps the input levels and output credits up to B
        settings |= {"split": True, "buffer_depth": b}
    if kind.vc_split:  # its waiting heads' candidates stay, as the route register keeps them
        settings["vc_split"] = True
    if kind.entering:  # bubble flow control: heads entering a ring read free2
        settings["entering"] = kind.entering
    if kind.straight:  # the flits on the links, which may bypass
        settings["straight"] = kind.straight
    key = tuple(sorted((k, v if k != "turns" else tuple(sorted(v))) for k, v in settings.items()))
    unit = f"allocator ({len(kind.in_vcs)} ports)"
    found.append(
        Property(
            unit,
            "grants",
            "each input port pops at most one VC it picked that has a flit; each output grants "
            "at most one input; a port pops exactly when granted"
            + ("; a staged pick keeps its flit" if kind.split else "")
            + (
                "; a flit bypasses only from an empty FIFO onto its straight output, never"
                " beside a grant there"
                if kind.straight
                else ""
            ),
            "allocator grants",
            lambda: AllocatorHarness(ownership=False, **settings),
            ("grants", key),
        )
    )
    found.append(
        Property(
            unit,
            "ownership",
            "a granted flit's output VC has a credit; a head takes an owner-less candidate; "
            "body and tail follow their head's VC; only a tail releases it"
            + ("; a head enters a ring only with room for two packets" if kind.entering else "")
            + (
                "; a staged VC's second flit crosses only with a second credit"
                if kind.split
                else ""
            )
            + (
                "; a bypassing flit has a credit, a head an owner-less candidate, a body its"
                " packet's VC"
                if kind.straight
                else ""
            ),
            "ownership",
            lambda: AllocatorHarness(state=True, **settings),
            ("ownership", key),
        )
    )
    if kind.rows is not None:
        found.append(
            Property(
                f"route units ({kind.rows.kind}, {len(kind.ids)} switches)",
                "route",
                "for every head at every input VC of every switch of the kind: the candidates "
                "are the routing function's, and so is the next head",
                None,
                lambda: RouteHarness(kind.rows.plan, kind.ids, rows=kind.rows),
                ("route", kind.ids),
                combinational=True,
            )
        )
    return found


@dataclass
class Outcome:
    """What the solver concluded for one property."""

    mode: str  # "prove", "bmc", "failed" or "error" (the tools gave no verdict)
    depth: int  # prove: k; bmc: cycles from reset checked; failed: the failing step
    seconds: float
    note: str = ""  # why a bound is smaller than asked, or the proof fell back
    vcd: Path | None = None

    @property
    def holds(self) -> bool:
        return self.mode in ("prove", "bmc")

    def text(self) -> str:
        if self.mode == "prove" and self.note == COMBINATIONAL:
            return "proven (combinational: every input in one step)"
        if self.mode == "prove":
            return f"proven (k-induction, k={self.depth})"
        if self.mode == "bmc":
            return f"bounded to {self.depth}" + (f" ({self.note})" if self.note else "")
        if self.mode == "error":
            return f"ERROR: {self.note}"
        return f"FAILED at step {self.depth}: counterexample {self.vcd}"


def _check(prop: Property, directory: Path, depth: int, timeout: int) -> Outcome:
    """Prove ``prop`` if inductive, else (or if induction does not close in time) bound it."""
    start = time.monotonic()
    note = ""
    if prop.combinational:
        result = run_sby(prop.make(), directory / "bmc", mode="bmc", depth=1, timeout=timeout)
        seconds = time.monotonic() - start
        if result.status == "PASS":
            return Outcome("prove", 1, seconds, COMBINATIONAL)
        if result.status == "FAIL":
            return Outcome("failed", 0, seconds, vcd=result.vcd)
        last = result.log.strip().splitlines()[-1:] or ["no output"]
        return Outcome("error", 0, seconds, f"SymbiYosys gave {result.status}: {last[0]}")
    if prop.inductive:
        k = INDUCTION_DEPTH[prop.inductive]
        result = run_sby(prop.make(), directory / "prove", mode="prove", depth=k, timeout=timeout)
        if result.status == "PASS":
            return Outcome("prove", k, time.monotonic() - start)
        if result.status == "FAIL":
            return Outcome("failed", result.checked + 1, time.monotonic() - start, vcd=result.vcd)
        note = f"induction {result.status.lower()} at k={k}"
    if prop.max_depth is not None and depth > prop.max_depth:
        depth = prop.max_depth
        note = f"capped at {depth}: each cycle more roughly doubles the solver's time"
    result = run_sby(prop.make(), directory / "bmc", mode="bmc", depth=depth, timeout=timeout)
    seconds = time.monotonic() - start
    if result.status == "FAIL":
        return Outcome("failed", result.checked + 1, seconds, vcd=result.vcd)
    if result.status == "PASS":
        return Outcome("bmc", depth, seconds, note)
    if result.status != "TIMEOUT":  # a crash or no verdict: never reported as holding
        last = result.log.strip().splitlines()[-1:] or ["no output"]
        return Outcome("error", 0, seconds, f"SymbiYosys gave {result.status}: {last[0]}")
    reached = result.checked + 1  # cycles 0..checked hold
    limit = f"the solver's {timeout} s limit stopped it at {reached} of {depth}"
    return Outcome("bmc", reached, seconds, f"{note}; {limit}" if note else limit)


def prove(
    kinds: list[ProofKind],
    directory: Path,
    *,
    depth: int,
    timeout: int,
    each: Callable[[int, int], None] | None = None,
) -> list[tuple[ProofKind, list[tuple[Property, Outcome]]]]:
    """Check every kind's properties, each distinct one once, in ``directory`` (the traces of
    failures stay there). ``each(done, total)`` reports progress over the distinct ones."""
    per_kind = [(kind, properties(kind)) for kind in kinds]
    distinct: dict[tuple, Property] = {}
    for _kind, props in per_kind:
        for prop in props:
            distinct.setdefault(prop.key, prop)
    outcomes: dict[tuple, Outcome] = {}
    if each:
        each(0, len(distinct))
    for i, (key, prop) in enumerate(distinct.items()):
        outcomes[key] = _check(prop, Path(directory) / f"p{i}", depth, timeout)
        if each:
            each(i + 1, len(distinct))
    return [(kind, [(prop, outcomes[prop.key]) for prop in props]) for kind, props in per_kind]
