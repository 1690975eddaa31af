"""The spec's ``router:`` section: the switch microarchitecture choices of every switch.

Each setting names one cycle behaviour of docs/microarchitecture.md; the model and the RTL
implement every value, so a setting changes cycles and area, never what is delivered. Absent
keys (and an absent section) give the defaults below; every earlier switch stays available by
name (``selection: first-free`` is the switch before round-robin selection became the default),
so older figures stay reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from .errors import PlanError, SpecError
from .fields import choice, describe, integer

__all__ = [
    "RouterSettings",
    "parse_router",
    "default_endpoint_vcs",
    "STAGES",
    "ALLOCATORS",
    "SELECTIONS",
    "SWITCHINGS",
    "BUFFERS",
    "BYPASSES",
    "bypass_clash",
    "bypass_routing_clash",
    "low_occupancy",
    "lfsr_seed",
    "lfsr_step",
    "random_pick",
    "head_cycles",
]

#: most VCs of an injection or ejection link (as many as any link may have)
MAX_INJECTION_VCS = 16

#: the widest ``head_bits`` a spec may name (a flit field that wide is no constraint at all)
MAX_HEAD_BITS = 1024

#: the spec value (and default) of ``injection_vcs`` and ``ejection_vcs`` that
#: :func:`default_endpoint_vcs` settles
AUTO = "auto"

#: pipeline depths: switch cycles a head spends per hop before the link (1: route, allocation
#: and traversal in one cycle; 2: route computation in its own registered cycle first; 3: then
#: VC allocation in a cycle of its own, before switch allocation and traversal; 4: then switch
#: allocation in two cycles, input arbitration registered before output arbitration; 5: then VC
#: allocation in two cycles too, a head per input port registered before the output ports grant)
STAGES = (1, 2, 3, 4, 5)
#: ``separable``: one input-first separable iteration; ``separable-2``: a second iteration for
#: the inputs and outputs the first left unmatched
ALLOCATORS = ("separable", "separable-2")
#: how a head picks among its free candidates with credit: the first in priority order,
#: round-robin per input port over the switch's output ports (the default: on the 4-ary 3-tree it
#: spreads the up pool, latency at 0.30 load 1.23x zero-load against first-free's 1.43x), or
#: by occupancy: the routing's priority levels first, low-occupancy output VCs
#: (:func:`low_occupancy`) before the others within a level, round-robin among equals (4-ary
#: 3-tree at 0.30 load: 1.23x zero-load, as round-robin; bench/adaptive.py for the adaptive
#: routings), or at random: one of the usable output ports drawn from a pseudo-random sequence
#: per input port (:func:`random_pick`; the RN1's random pick between a direction's two outputs)
SELECTIONS = ("first-free", "round-robin", "occupancy", "random")
#: how much of the next buffer a head needs before it moves (docs/microarchitecture.md,
#: *Switching modes*): ``wormhole`` a free output VC with a credit; ``cut_through`` (virtual
#: cut-through) a free output VC whose downstream buffer takes the longest packet whole;
#: ``store_and_forward`` that too, and its own packet whole in its input buffer first
SWITCHINGS = ("wormhole", "cut_through", "store_and_forward")

#: what holds the input VC buffers: ``distributed``, asynchronous-read memories (LUTRAM on ECP5,
#: flip-flops on iCE40, which has no LUTRAM); ``block-ram``, one synchronous-read RAM per input
#: port (SB_RAM40_4K on iCE40, DP16KD on ECP5) behind a front register per VC, same cycles
#: (hdl/router/input_unit.py, ``RamQueues``)
BUFFERS = ("distributed", "block-ram")
#: which flits may cross a switch in the cycle they arrive, straight from the link
#: (docs/microarchitecture.md, *Straight bypass*): ``none``; ``straight``, a flit that
#: continues along its ring (same dimension, same direction) when its input VC's buffer is
#: empty, its output VC has a credit and no buffered flit asks that output port: one cycle per
#: straight hop instead of two
BYPASSES = ("none", "straight")

#: ``random`` selection's sequence: a 16-bit Galois LFSR (x^16 + x^14 + x^13 + x^11 + 1, maximal:
#: 65535 states), one per input port
LFSR_TAPS = 0xB400


def lfsr_seed(port: int) -> int:
    """Input port ``port``'s first LFSR state (never 0, the LFSR's fixed point)."""
    return (0xACE1 + 0x9E37 * port) & 0xFFFF or 1


def lfsr_step(state: int) -> int:
    """The LFSR's next state: shift right, the taps XORed in when the bit shifted out is 1."""
    return (state >> 1) ^ (LFSR_TAPS if state & 1 else 0)


def random_pick(state: int, usable: int) -> int:
    """Which of a ``random`` head's ``usable`` output ports it takes, counted in ascending port
    order: the state's low 8 bits modulo their number (each port's chance within 1/256 of the
    others' with up to 8 ports, the same with 1, 2, 4 or 8)."""
    return (state & 0xFF) % usable


@dataclass(frozen=True)
class RouterSettings:
    """Switch choices shared by every switch of a fabric (the spec's ``router:`` section)."""

    stages: int = 1
    allocator: str = "separable"
    selection: str = "round-robin"
    #: VCs of every injection link (endpoint -> switch): N lets a packet start on another local
    #: VC while one waits at the switch. 1 is the endpoint before the key, one packet queue (and
    #: what plans written without it mean); a spec that does not name it gets
    #: :func:`default_endpoint_vcs`
    injection_vcs: int = 1
    #: VCs of every ejection link (switch -> endpoint), each with its own receive buffer: with
    #: N > 1 a packet whose flits trickle in no longer holds the only way into its endpoint.
    #: 1 is the endpoint before the key (and what plans written without it mean); a spec that
    #: does not name it gets :func:`default_endpoint_vcs`
    ejection_vcs: int = 1
    #: bits of the routing head one flit carries; None (the default): the whole head rides in
    #: the first flit's head field. With N, a head of ``len`` bits at a hop travels as
    #: ceil(len / N) head flits (docs/microarchitecture.md, *Heads longer than a flit*), so a
    #: long head costs its length at every switch and a shrinking (sliced) one less and less
    head_bits: int | None = None
    #: ``wormhole`` (the default), ``cut_through`` or ``store_and_forward`` (:data:`SWITCHINGS`)
    switching: str = "wormhole"
    #: the longest packet the switches must hold whole, in flits (the traffic's longest
    #: ``packet_length``): None under wormhole, which holds none whole. ``cut_through`` takes
    #: an output VC only with this many credits: the RTL knows no packet's length, so every
    #: packet is treated as the longest one
    longest_packet: int | None = None
    #: what holds the input VC buffers (:data:`BUFFERS`); ``block-ram`` pops one flit per pop,
    #: so it does not take ``head_bits`` (whose heads may drop surplus head flits with theirs)
    buffers: str = "distributed"
    #: ``none`` (the default) or ``straight`` (:data:`BYPASSES`): only at ``stages`` 1, under
    #: wormhole switching, one-flit heads and distributed buffers
    bypass: str = "none"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("stages", self.stages, STAGES),
            ("allocator", self.allocator, ALLOCATORS),
            ("selection", self.selection, SELECTIONS),
            ("switching", self.switching, SWITCHINGS),
            ("buffers", self.buffers, BUFFERS),
            ("bypass", self.bypass, BYPASSES),
        ):
            if value not in allowed or isinstance(value, bool):
                raise ValueError(f"router {name} must be one of {allowed!r}, not {value!r}")
        if self.stages >= 4 and self.allocator != "separable":
            raise ValueError(
                f"router allocator {self.allocator!r} needs stages 1, 2 or 3, not {self.stages}"
            )
        for name in ("injection_vcs", "ejection_vcs"):
            vcs = getattr(self, name)
            if vcs == AUTO:
                continue  # a spec's, until the plan's links are known (default_endpoint_vcs)
            if (
                isinstance(vcs, bool)
                or not isinstance(vcs, int)
                or not 1 <= vcs <= MAX_INJECTION_VCS
            ):
                raise ValueError(
                    f"router {name} must be an integer in 1..{MAX_INJECTION_VCS}, not {vcs!r}"
                )
        bits = self.head_bits
        if bits is not None and (isinstance(bits, bool) or not isinstance(bits, int) or bits < 1):
            raise ValueError(f"router head_bits must be a positive integer or None, not {bits!r}")
        longest = self.longest_packet
        if self.switching == "wormhole" and longest is not None:
            raise ValueError(f"router longest_packet {longest!r} means nothing to wormhole")
        if longest is not None and (
            isinstance(longest, bool) or not isinstance(longest, int) or longest < 1
        ):
            raise ValueError(f"router longest_packet must be a positive integer, not {longest!r}")
        if self.switching != "wormhole" and bits is not None:
            raise ValueError(f"router switching {self.switching} needs head_bits None")
        if self.buffers == "block-ram" and bits is not None:
            raise ValueError("router buffers block-ram does not take head_bits")
        if self.bypasses:
            clash = bypass_clash(self)
            if clash:
                raise ValueError(f"router bypass straight {clash}")

    @property
    def bypasses(self) -> bool:
        """Flits going straight may cross a switch in the cycle they arrive."""
        return self.bypass == "straight"

    @property
    def whole_packets(self) -> int:
        """The credits a free output VC needs before a head may take it: :attr:`longest_packet`
        under ``cut_through`` and ``store_and_forward``, 0 under wormhole (whose heads ask one
        credit, as every flit does)."""
        if self.switching == "wormhole":
            return 0
        if self.longest_packet is None:  # a spec's, until its traffic is read
            raise ValueError(f"router switching {self.switching} without a longest_packet")
        return self.longest_packet

    def check_length(self, length: int) -> None:
        """Refuse (ValueError) a packet longer than the switches hold whole."""
        if self.longest_packet is not None and length > self.longest_packet:
            raise ValueError(
                f"a {length}-flit packet under {self.switching} switching built for packets up"
                f" to {self.longest_packet} flits"
            )

    @property
    def stores(self) -> bool:
        """A head waits for its whole packet in its input buffer before it is routed."""
        return self.switching == "store_and_forward"

    @property
    def credit_period(self) -> int:
        """Cycles between a stream's flit and the one its credit lets follow on a
        switch-to-switch link (docs/microarchitecture.md, Streaming): 4 at ``stages`` 1-3, 6 at
        4-5 (5 on a path with no switch-to-switch link). Buffers of at least this many flits
        let a stream move one flit per cycle; B fewer move B per period."""
        return 4 if self.stages <= 3 else 6

    def streaming_cycles(
        self, packet_length: float, buffer_depth: int, link_latency: int = 1
    ) -> float:
        """What a lone packet of ``packet_length`` flits adds to the zero-load latency when
        ``buffer_depth`` B does not cover the credit period P (:attr:`credit_period`, and
        2 (d - 1) more on links of ``link_latency`` d): B flits per period, so
        floor((L - 1) / B) * (P - B) cycles (0 while L <= B); of a mean length, the mean
        packet's."""
        period = self.credit_period + 2 * (link_latency - 1)
        if buffer_depth >= period:
            return 0
        return math.floor((packet_length - 1) / buffer_depth) * (period - buffer_depth)

    def zero_load_latency(
        self,
        hops: float,
        packet_length: float,
        head_cycles: float = 0,
        buffer_depth: int | None = None,
        link_latency: int = 1,
        wire_cycles: float | None = None,
        straight: float = 0,
    ) -> float:
        """Creation to tail delivery of a lone packet over ``hops`` switch-to-switch links
        (docs/microarchitecture.md, Consequences): one cycle to inject, ``stages`` + 1 cycles
        per switch for ``hops`` + 1 switches, and ``packet_length`` - 1 of serialisation, plus
        :meth:`streaming_cycles` when ``buffer_depth`` is given (None: buffers that cover the
        packet). ``head_cycles`` is what heads longer than a flit add (``head_bits``): H_f - 1
        per switch for the head flits it waits for, and H_f - 1 on the ejection link
        (:func:`head_cycles`; with short buffers the model may take longer still). Links of
        ``link_latency`` d (a plan's :attr:`~zfabric.plan.FabricPlan.link_latency`, its
        longest) stretch the credit period and add d - 1 cycles per hop, or ``wire_cycles``
        where the path's own links were counted (internal links of nDT twin nodes and
        T-switches keep 1).

        Switching modes (docs/microarchitecture.md, *Switching modes*). ``cut_through`` equals
        wormhole at zero load: every downstream buffer is empty, so every output VC a lone head
        wants has all B >= L credits. ``store_and_forward`` adds L - 1 per switch, H + 1 of
        them: the flits leave the source one per cycle and cross each switch one per cycle (B
        >= L credits, so no flit ever waits for one), so the tail enters a switch's buffer L - 1
        cycles after the head, and the head is routed only then, as if it reached the front
        L - 1 cycles late; from there its cycles are wormhole's, at every ``stages``. The
        ejection link adds nothing: the endpoint takes each flit as it arrives. Bubble flow
        control (a routing's, :mod:`zfabric.bubble`) adds nothing to ``cut_through``: a lone
        head entering a ring finds its downstream buffer empty, B >= 2L credits.

        The straight bypass (``bypass: straight``) takes one cycle off each of the ``straight``
        switches the packet goes straight through (docs/microarchitecture.md, *Straight
        bypass*): a lone flit crosses such a switch in the cycle it arrives on the link. With
        dimension-order routing over D dimensions that is H - D switches."""
        streaming = (
            0
            if buffer_depth is None
            else self.streaming_cycles(packet_length, buffer_depth, link_latency)
        )
        wires = hops * (link_latency - 1) if wire_cycles is None else wire_cycles
        stored = (hops + 1) * (packet_length - 1) if self.stores else 0
        return (
            1
            + (self.stages + 1) * (hops + 1)
            + packet_length
            - 1
            + head_cycles
            + wires
            + streaming
            + stored
            - (straight if self.bypasses else 0)
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RouterSettings:
        """From a plan's JSON (a malformed one is a :class:`PlanError`); plans written before
        ejection VCs had one."""
        try:
            return cls(**{"ejection_vcs": 1, **data})
        except (TypeError, ValueError) as error:
            raise PlanError(f"malformed plan: router {data!r}: {error}") from None


def parse_router(reader: Any) -> RouterSettings:
    """Read the ``router:`` section (``reader``, a spec ``Reader``, is empty when it is absent)."""

    stages = reader.get("stages", _stages, RouterSettings.stages)
    allocator = reader.get("allocator", choice(list(ALLOCATORS)), RouterSettings.allocator)
    if stages >= 4 and allocator != "separable":
        # the input stage picks before any output is known: no second iteration to run
        reader.report(SpecError(reader.key("allocator"), f"{allocator} needs stages 1, 2 or 3"))
        allocator = RouterSettings.allocator
    head_bits = reader.get("head_bits", integer(1, MAX_HEAD_BITS), None)
    buffers = reader.get("buffers", choice(list(BUFFERS)), RouterSettings.buffers)
    if buffers == "block-ram" and head_bits is not None:
        # a sliced head pops its surplus head flits with it: several reads of one RAM at once
        reader.report(
            SpecError(reader.key("buffers"), "block-ram cannot take head_bits (use distributed)")
        )
        buffers = RouterSettings.buffers
    settings = RouterSettings(
        stages=stages,
        allocator=allocator,
        selection=reader.get("selection", choice(list(SELECTIONS)), RouterSettings.selection),
        injection_vcs=reader.get("injection_vcs", _endpoint_vcs, AUTO),
        ejection_vcs=reader.get("ejection_vcs", _endpoint_vcs, AUTO),
        head_bits=head_bits,
        buffers=buffers,
    )
    switching = reader.get("switching", choice(list(SWITCHINGS)), RouterSettings.switching)
    if switching != "wormhole" and settings.head_bits is not None:
        # the head flits' count varies per hop (sliced): no one length for the credit compare
        reader.report(
            SpecError(reader.key("head_bits"), f"cannot be used with switching {switching}")
        )
        switching = RouterSettings.switching
    if switching != "wormhole":
        settings = replace(settings, switching=switching)
    bypass = reader.get("bypass", choice(list(BYPASSES)), RouterSettings.bypass)
    clash = bypass_clash(settings) if bypass != "none" else None
    if clash:
        reader.report(SpecError(reader.key("bypass"), f"{bypass} {clash}"))
        bypass = RouterSettings.bypass
    reader.finish()
    return settings if bypass == "none" else replace(settings, bypass=bypass)


def bypass_routing_clash(routing: str) -> str | None:
    """Why a fabric routed by ``routing`` cannot take the straight bypass, or None: it is
    defined for dimension-order routing, whose head has one candidate port, so whether it goes
    straight is known from the head alone and no selection pointer ever decides its VC."""
    return None if routing == "dor" else f"needs routing dor, not {routing}"


def bypass_clash(settings: RouterSettings) -> str | None:
    """Why ``settings`` (the other keys) cannot take the straight bypass, or None: it is
    defined for the
    one-cycle switch only (the bypassing flit skips exactly its one switch cycle), wormhole
    switching (no whole-packet credit compare on the link's path), one-flit heads (the link's
    flit is routed alone) and distributed buffers (docs/microarchitecture.md, *Straight
    bypass*)."""
    if settings.stages != 1:
        return f"needs stages 1, not {settings.stages}"
    if settings.switching != "wormhole":
        return f"needs switching wormhole, not {settings.switching}"
    if settings.head_bits is not None:
        return "cannot be used with head_bits"
    if settings.buffers != "distributed":
        return f"needs buffers distributed, not {settings.buffers}"
    if settings.selection == "occupancy":
        return "cannot be used with selection occupancy"
    return None


def _endpoint_vcs(value: Any, path: str) -> int | str:

    if value == AUTO:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INJECTION_VCS:
        raise SpecError(
            path, f"must be {AUTO} or an integer in 1..{MAX_INJECTION_VCS}, got {describe(value)}"
        )
    return value


def head_cycles(head_flits: list[int]) -> int:
    """What multi-flit heads add to a lone packet's latency, from the head flits it carries
    into each switch and then onto the ejection link (``head_flits``, source first): each
    switch waits H_f - 1 cycles for the head flits behind the first, and the ejection link
    carries H_f - 1 flits more than the payload (docs/microarchitecture.md, Consequences)."""
    return sum(h - 1 for h in head_flits)


def low_occupancy(buffer_depth: int) -> int:
    """The least credit at which an output VC counts as *low occupancy* for ``occupancy``
    selection: more than half of the downstream buffer free (the reference's low/high ranges,
    ndt.md §3.5, leave the threshold open). A switch compares its registered credit counter
    with this constant: one bit per output VC, no comparison between candidates."""
    return buffer_depth // 2 + 1


def default_endpoint_vcs(link_vcs: list[int]) -> int:
    """Injection and ejection VCs of a spec that does not name them: 2 when every
    switch-to-switch link has 2 VCs or more, else 1. Measured (bench/allocator_saturation.py,
    uniform traffic, 4-flit packets and buffers): a second injection VC lets a packet start
    while the previous one waits at the switch's local input (knee torus-4x4 with fixed dateline
    classes 0.581 -> 0.619, mesh-4x4 0.556 -> 0.581, the 2-VC 4-ary 3-tree 0.562 -> 0.588, for
    about 100 LUT4 and 30 FF on the torus switch; 3 or 4 VCs gain less than balanced dateline
    classes and nothing on the mesh: torus-4x4 0.637 with either against 0.619, mesh-4x4 0.594
    and 0.588 against 0.594, medians of seeds 1-3, docs/design/router-v2.md), and
    a second ejection VC lets a packet whose flits trickle in stop blocking every other packet
    for its endpoint (mesh-4x4 0.512 -> 0.556). On 1-VC links both hurt: two
    packets interleaving each hold their whole path twice as long (1-VC 4-ary 3-tree 0.469 ->
    0.450 with two injection VCs, 0.438 with two ejection VCs)."""
    return 2 if link_vcs and min(link_vcs) >= 2 else 1


def _stages(value: Any, path: str) -> int:

    if isinstance(value, bool) or value not in STAGES:
        allowed = ", ".join(str(s) for s in STAGES)
        raise SpecError(path, f"must be one of {allowed}, got {describe(value)}")
    return value
