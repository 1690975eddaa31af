"""Transit source routes: 2-bit slices of a byte stream, read chip by chip (A. DeHon, "Fat-Tree
Routing for Transit", MIT AI Lab, 1990, §3.2 and §3.8).

The source computes the whole route R = RU.RD.RC (:func:`transit_route`, §3.8.3): RU climbs
the up chips to the unit-tree layer where source and destination meet and crosses over into
the right down level, RD is the destination's path down (one byte per layer), RC its place in
its leaf. The head is the remaining bytes. Each chip reads one 2-bit slice of the head byte
(its ``slice`` in the plan, 0 = bits 7:6: the *slice-index* form of the seed's rotating links),
and each input may first swallow the head byte (the plan's per-input ``swallow``): the
laterals and the entries from above always, the up inputs of every fourth layer, the inputs of
the first stage of a bidelta stack after the first. The slice picks a direction; its two
outputs on a standard-mode chip are offered as equal candidates (dilation 2), which the
switch's output selection (``router.selection``) chooses between; a half (alternate mode) has
one. Injection: either of the processor's two inputs.

Deadlock freedom (proved by ``zfabric check`` on every plan): a route climbs up chips of
strictly rising layer, crosses over once, descends, and enters a leaf only on its stage-1
fat-tree inputs, whose routes never take direction 11 again (P's top slice is never 11), so
one VC suffices.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable
from typing import Any

from ..plan import FabricPlan, PlanView
from ..symmetry import Symmetry
from ..topologies.transit import address, params_of, transit_symmetries
from .base import Decision, Hop, Injection, RoutingFunction, make_routing, routing

__all__ = ["TransitRouting", "transit_route", "params_of", "crossover_level", "pair_classes"]

#: pair classes are counted by walking every ordered pair's route up to this many endpoints
CLASSES_ENDPOINT_LIMIT = 1024

Head = tuple[int, ...]
#: the crossover code O by the highest differing bit pair of the leading byte of C1 xor C2:
#: bits 7:6 -> level 3 (10), 5:4 -> level 2 (01), 3:2 -> level 1 (00)
_CROSSOVER = {3: 0b10, 2: 0b01, 1: 0b00}


def transit_route(
    c1: Head, c2: Head, p2: int | None, *, full: bool = False, capped: bool = False
) -> Head:
    """The route R = RU.RD.RC from address C1.P1 to C2.P2, as bytes (§3.8.3).

    I = C1 xor C2; the unit-tree layer j of the crossover is the position, from the bottom, of
    I's leading non-zero byte; O is the crossover code of that byte's highest set bit; RU =
    (11)^j.O.(00)^((3 - j) mod 4) (a full tree: (11)^(j-1).O.(00)^((4 - j) mod 4)); RD the low
    j bytes of C2; RC = P2 (absent in a full tree). Same C: R = RC. ``capped``: C's leading
    byte is the copy; copies differing cross over into the cap from the top layer j, its up
    direction (O = 11, "up becomes a fourth lateral"), and RD is all of C2.
    """
    if len(c1) != len(c2):
        raise ValueError(f"addresses of {len(c1)} and {len(c2)} bytes")
    rc = () if p2 is None else (p2,)
    lead = _first_difference(c1, c2)
    if lead is None:
        return rc
    j = len(c2) - lead
    if capped and lead == 0:
        j, code = j - 1, 0b11
    else:
        pair = ((c1[lead] ^ c2[lead]).bit_length() - 1) // 2
        if pair not in _CROSSOVER:
            raise ValueError(f"addresses differ in the unused bits 1:0 of byte {lead}")
        code = _CROSSOVER[pair]
    return _route_up(j - 1 if full else j, code) + tuple(c2[lead:]) + rc


def _first_difference(c1: Head, c2: Head) -> int | None:
    """The index of the first byte where C1 and C2 differ (None: the same C)."""
    for k, byte in enumerate(c1):
        if byte != c2[k]:
            return k
    return None


@functools.cache
def _route_up(climb: int, code: int) -> Head:
    """RU: ``climb`` up digits (11) then the crossover code, padded with 00 to whole bytes,
    the first digit in bits 7:6 (a handful of values, computed once each)."""
    digits = [0b11] * climb + [code]
    digits += [0] * (-len(digits) % 4)
    return tuple(
        sum(d << (6 - 2 * t) for t, d in enumerate(digits[k : k + 4]))
        for k in range(0, len(digits), 4)
    )


def crossover_level(c1: Head, c2: Head, *, capped: bool = False) -> int:
    """The fat-tree level k where a route from C1 to C2 crosses over: 3 (j - 1) + l for down
    level l of unit-tree layer j (the seed's level numbering of §4.3); 0 for the same C; the
    cap of a capped network is level 4 of its top layer j."""
    lead = _first_difference(c1, c2)
    if lead is None:
        return 0
    if capped and lead == 0:
        return 3 * (len(c2) - 2) + 4
    level = ((c1[lead] ^ c2[lead]).bit_length() - 1) // 2
    return 3 * (len(c2) - lead - 1) + level


def pair_classes(
    plan: FabricPlan, sources: Iterable[int] | None = None
) -> dict[int, dict[str, Any]] | None:
    """Per crossover level k (:func:`crossover_level`; a bidelta has the one class 0): the
    ordered pairs, and the chips (stages) and swallows their routes take (the terms of the
    seed's latency model, §4.3), counted by walking every pair's route in the plan along its
    first choices (the two outputs of a direction lead to the same stages); None past
    :data:`CLASSES_ENDPOINT_LIMIT` endpoints. ``sources``: walk only the pairs from these."""
    n = len(plan.endpoints)
    if sources is None and n > CLASSES_ENDPOINT_LIMIT:
        return None
    chosen = set(range(n) if sources is None else sources)
    view = PlanView(plan)
    rf = make_routing(view)
    classes: dict[int, dict[str, Any]] = {}
    #: routing state -> (stages, swallows) from there to the destination
    rest: dict[Hashable, tuple[int, int]] = {}
    bidelta = rf.transit.form == "bidelta"
    for dst in range(n):
        c2 = rf.addresses[dst][0]
        routes: dict[Head, tuple[int, Head]] = {}  # per source C: (class, route)
        for src in range(n):
            if src == dst or src not in chosen:
                continue
            c1 = rf.addresses[src][0]
            if c1 not in routes:
                k = 0 if bidelta else crossover_level(c1, c2, capped=rf.transit.cap)
                routes[c1] = (k, rf.route_bytes(src, dst))
            k, head = routes[c1]
            first = rf.injections(src, dst)[0]  # in a degraded fabric, one that still delivers
            switch, port = first.switch, first.port
            path: list[tuple[Hashable, int]] = []  # (state, its swallow) until a known state
            while True:
                key = rf.state_key(switch, port, 0, head)
                if key in rest:
                    after = rest[key]
                    break
                path.append((key, rf.swallow[switch][port]))
                decision = rf.route(switch, port, 0, head)
                link = view.out_link[switch][decision.hops[0].port]
                if link is None:
                    after = (0, 0)
                    break
                switch, port, head = link.dst.switch, link.dst.port, decision.head
            for key, swallow in reversed(path):
                after = rest[key] = (after[0] + 1, after[1] + swallow)
            stages, swallows = after
            entry = classes.setdefault(k, {"pairs": 0, "stages": set(), "swallows": set()})
            entry["pairs"] += 1
            entry["stages"].add(stages)
            entry["swallows"].add(swallows)
    return {
        k: {
            "pairs": entry["pairs"],
            "stages": sorted(entry["stages"]),
            "swallows": sorted(entry["swallows"]),
        }
        for k, entry in sorted(classes.items())
    }


@routing("transit")
class TransitRouting(RoutingFunction):
    """Source routes of 2-bit slices; per input a swallow, per chip a slice."""

    uses_input_port = True
    #: the RN1 route unit drops whole bytes and has no head-flit counts
    rtl_head_bits = False

    @classmethod
    def head_width(cls, plan: FabricPlan) -> int:
        """The longest route's bits: crossing over at the top layer (or a bidelta's one byte
        per stack)."""
        params = params_of(plan)
        if params.form == "bidelta":
            return 8 * len(params.stacks)
        layers = params.ut_layers
        climb = layers - 1 if params.form == "full" else layers
        ru = -(-(climb + 1) // 4)
        return 8 * (ru + layers + params.cap + (params.form == "hybrid"))

    def __init__(self, view):
        super().__init__(view)
        plan = view.plan
        self.transit = params_of(plan)
        self.slice = [s.position["slice"] for s in plan.switches]
        self.swallow = [s.position["swallow"] for s in plan.switches]
        #: per switch, per direction: the outputs that lead somewhere, as hops
        self.hops: list[list[tuple[Hop, ...]]] = []
        for switch in plan.switches:
            wires = 2 if switch.radix == 8 else 1
            per_direction = []
            for d in range(4):
                hops = []
                for port in range(wires * d, wires * (d + 1)):
                    link = view.out_link[switch.id][port]
                    if link is not None:
                        hops.append(Hop(port, tuple(range(link.vcs))))
                    elif (switch.id, port) in view.ejection_at:
                        hops.append(Hop(port, self.ejection_vcs))
                per_direction.append(tuple(hops))
            self.hops.append(per_direction)
        self.addresses = [address(self.transit, e.id) for e in plan.endpoints]
        self.inputs = [
            [(a.switch, a.port) for i, a in enumerate(e.attachments) if e.injects(i)]
            for e in plan.endpoints
        ]

    def symmetries(self) -> tuple[Symmetry, ...]:
        """Per address digit a permutation of its values (:func:`transit_symmetries`): a
        route reads the destination's digits and compares the source's only for the
        crossover, the highest digit where they differ, which any such permutation keeps."""
        return transit_symmetries(self.view.plan)

    def route_bytes(self, src: int, dst: int) -> Head:
        """The route ``src`` writes for ``dst``."""
        (c1, _), (c2, p2) = self.addresses[src], self.addresses[dst]
        if self.transit.form == "bidelta":
            return c2
        return transit_route(c1, c2, p2, full=self.transit.form == "full", capped=self.transit.cap)

    def head_value(self, head: Head) -> int:
        """The head's bytes in a head flit: the first (the one read next) in bits 7:0, each
        later byte 8 bits higher, so that a swallow is a shift right by 8 and an exhausted
        head is 0."""
        return sum(byte << 8 * k for k, byte in enumerate(head))

    def head_of_value(self, value: int, width: int) -> Head:
        """The ``width // 8`` bytes of ``value``, the first in bits 7:0 (bytes past the route's
        end are zeros, as a head flit carries them)."""
        return tuple((value >> 8 * k) & 0xFF for k in range(width // 8))

    def head_length(self, head: Head) -> int:
        """The bits left: a swallow drops a byte."""
        return 8 * len(head)

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        head = self.route_bytes(src, dst)
        return tuple(Injection(switch, port, head) for switch, port in self.inputs[src])

    def route(self, switch: int, in_port: int, in_vc: int, head: Head) -> Decision:
        if self.swallow[switch][in_port]:
            head = head[1:]
        if not head:
            return Decision((), head)
        direction = (head[0] >> (6 - 2 * self.slice[switch])) & 3
        return Decision(self.hops[switch][direction], head)

    def state_key(self, switch: int, in_port: int, in_vc: int, head: Head) -> Hashable:
        """``route`` sees the input only through its swallow."""
        return switch, self.swallow[switch][in_port], head
