"""Transit fat trees: RN1 routing chips in bidelta networks, bidelta leaf clusters and unit trees.

A. DeHon, "Fat-Tree Routing for Transit", MIT AI Lab, 1990. The RN1 chip has 8 inputs and 8
outputs; in *standard mode* it is one crossbar with 2 equivalent outputs per direction
(dilation 2: output 2d + w is wire w of direction d), in *alternate mode* two independent
halves, each 4 inputs and 1 output per direction (here two 4-port switches sharing a chip id).
A switch routes on a 2-bit slice of the head byte; an input may first *swallow* the head byte
(drop it and route on the next). The input and the output of one port index face unrelated
neighbours: every link is a one-way channel, and a processor injects on two inputs and
receives on two outputs, each pair on two different chips.

Forms (``form``):

- ``bidelta``: a dilated radix-4 delta network of h = sum(stacks) stages, N = 4^h processors,
  N/4 chips per stage (stage t routes on destination digit t, the last stage in alternate
  mode, looping back to the processors); a stack is the run of stages between two swallows.
- ``hybrid``: 64^ut_layers bidelta leaf clusters B_n (``leaf_stages`` j = 2..4 stages, n =
  3 * 4^(j-1) processors) joined by ``ut_layers`` layers of UT64x8 unit trees; ``cap``: four
  copies whose top unit trees are capped (UT64x8c: 16 cap chips each, joining the copies).
- ``full``: UT64x2 unit trees with the processors as their leaves, 64 each, under
  ``ut_layers - 1`` layers of UT64x8.

A unit tree has an up layer (up chips: direction 11 goes further up, 00 / 01 / 10 cross over
into its down levels 1 / 2 / 3) and three down levels (a 4-way tree). Where the seed leaves
the wiring open, the readings of its digest are taken: delta wiring ``(2x + w) mod G`` from
chip x of a stage group to the next group of G chips (a chip's two wires of one direction land
on two chips); a final node's two halves on chips f and f - 1; round-robin fills of a node's
inputs; wire q of a unit's up wires to unit tree q mod N_U of the layer above; the top layer's
up outputs and its level-3 inputs from above face nothing (unused).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import PlanError, SpecError
from ..fields import Reader, boolean, choice, describe, integer, short
from ..plan import PlanBuilder, Port
from ..spec import FabricSpec
from ..symmetry import Symmetry, symmetry_group
from .base import finish_plan, topology

__all__ = [
    "FORMS",
    "TransitParams",
    "UT64X8_CHIPS",
    "UT64X2_CHIPS",
    "leaf_chips",
    "transit_counts",
    "transit_chips",
    "address",
    "leaf_processors",
    "transit_summary",
    "params_of",
    "address_digits",
    "digit_read",
    "digit_permutation",
    "transit_symmetries",
]

FORMS = ("bidelta", "hybrid", "full")
#: chips of a unit tree (Tables 3.1 and 3.4): 64 + 64 + 48 + 32, and a quarter of each
UT64X8_CHIPS = 208
UT64X2_CHIPS = 52
#: channels a bidelta stack carries at most (a board plane of 64 chips, Eq 4.10)
STACK_CHANNELS = 512
#: a stack's copies: 8 before the last stack, 2 in it (B64x8 early, B256x2 last)
EARLY_COPIES, LAST_COPIES = 8, 2


@dataclass(frozen=True)
class TransitParams:
    """``form``; ``leaf_stages`` (j, hybrid); ``ut_layers`` (hybrid, full); ``stacks`` (the
    stages of each bidelta stack); ``cap`` (hybrid: four copies joined by a capped root)."""

    form: str
    leaf_stages: int = 0
    ut_layers: int = 0
    stacks: tuple[int, ...] = ()
    cap: bool = False

    def notation(self) -> str:
        if self.form == "bidelta":
            return f"bidelta, stacks {'+'.join(map(str, self.stacks))}"
        if self.form == "hybrid":
            return (
                f"hybrid, B{leaf_processors(self.leaf_stages)} leaves, {self.ut_layers} UT layer(s)"
                + (", capped" if self.cap else "")
            )
        return f"full, {self.ut_layers} UT layer(s)"


def leaf_processors(j: int) -> int:
    """Processors of a bidelta leaf cluster of j stages: 3 * 4^(j-1) (Eq 4.24)."""
    return 3 * 4 ** (j - 1)


def leaf_chips(j: int) -> int:
    """Chips of a leaf cluster B_n of j stages: (3j + 1) * 4^(j-2) (Eq 4.26)."""
    return (3 * j + 1) * 4 ** (j - 2)


def _stacks(value: Any, path: str) -> tuple[int, ...]:
    """The stages of each bidelta stack: 1..3 before the last, 2..4 in the last (a stack of j
    stages carries 4^j x copies channels, at most :data:`STACK_CHANNELS`)."""
    if not isinstance(value, list) or not value or len(value) > 8:
        raise SpecError(path, f"must be a list of 1 to 8 stage counts, got {describe(value)}")
    errors = []
    for i, stages in enumerate(value):
        where, last = f"{path}[{i}]", i == len(value) - 1
        copies = LAST_COPIES if last else EARLY_COPIES
        low, high = (2, 4) if last else (1, 3)  # the most a stack of `copies` copies holds
        which = "the last stack" if last else "a stack before the last"
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < low:
            why = " (its last stage is in alternate mode)" if last else ""
            errors.append(
                SpecError(
                    where,
                    f"must be an integer >= {low}: {which} has {low}+ stages{why},"
                    f" got {describe(stages)}",
                )
            )
        elif stages > high:
            stack = (
                f"a B{4**stages}x{copies} stack of {4**stages * copies} channels"
                if stages <= 2 * high
                else f"a stack of 4^{short(stages)} x {copies} channels"
            )
            errors.append(
                SpecError(
                    where,
                    f"{short(stages)} stages make {stack}, over the {STACK_CHANNELS} a stack"
                    f" holds ({which}: at most {high} stages)",
                )
            )
    if errors:
        raise SpecError.combine(errors)
    return tuple(value)


def parse(reader: Reader) -> TransitParams:
    form = reader.get("form", choice(FORMS))
    if form != "hybrid" and reader.has("cap"):
        what = "no unit-tree layers" if form == "bidelta" else "UT64x2 unit trees at its bottom"
        raise SpecError(
            reader.key("cap"),
            f"a {form} network has {what}: the capped root (UT64x8c, Eq 3.4-3.7) caps the"
            " UT64x8 layers over a hybrid's leaf clusters; use form: hybrid",
        )
    if form == "bidelta":
        return TransitParams(form, stacks=reader.get("stacks", _stacks))
    layers = reader.get("ut_layers", integer(1, 4), 1)
    if form == "hybrid":
        return TransitParams(
            form,
            leaf_stages=reader.get("leaf_stages", integer(2, 4)),
            ut_layers=layers,
            cap=reader.get("cap", boolean, False),
        )
    return TransitParams(form, ut_layers=layers)


# ---- counts (the seed's formulas) ---------------------------------------------------------------


def _whole(value: Fraction, what: str) -> int:
    if value.denominator != 1:
        raise ValueError(f"{what} is not whole: {value}")
    return int(value)


def transit_counts(params: TransitParams) -> dict[str, int]:
    """Processors and blocks by the seed's formulas: ``processors``, ``leaves`` (B_n clusters),
    ``UT64x2``, ``UT64x8``, ``UT64x8c``, ``chips``; ``switches`` counts each alternate-mode
    chip twice. A UT64x8c is a UT64x8 and its 16 cap chips (the capped 49 152's 67 584)."""
    if params.form == "bidelta":
        h = sum(params.stacks)
        n = 4**h
        chips = _whole(Fraction(n * h, 4), "N_c")  # Eq 4.40
        return {"processors": n, "chips": chips, "switches": chips + n // 4}
    i = params.ut_layers + (params.form == "hybrid")  # stack levels, the leaf's included
    if params.form == "hybrid" and params.cap:
        j = params.leaf_stages
        leaves = 4 * 64 ** (i - 1)
        total = leaves * leaf_processors(j)  # Eq 3.4
        units = _whole(Fraction(total, 576) * (1 - Fraction(1, 4 ** (i - 2))), "N_unit")  # 3.6
        capped = _whole(Fraction(total, 768 * 4 ** (i - 2)), "N_cunit")  # Eq 3.7
        chips = leaves * leaf_chips(j) + units * UT64X8_CHIPS + capped * (UT64X8_CHIPS + 16)
        return {
            "processors": total,
            "leaves": leaves,
            "UT64x8": units,
            "UT64x8c": capped,
            "chips": chips,
            "switches": chips + leaves * 3 * 4 ** (j - 2),
        }
    if params.form == "hybrid":
        j = params.leaf_stages
        total = 64 ** (i - 1) * leaf_processors(j)  # Eq 3.1
        units = _whole(Fraction(total, 576) * (1 - Fraction(1, 4 ** (i - 1))), "N_unit")  # Eq 3.3
        chips = _whole(  # Eq 4.29
            (leaf_chips(j) + Fraction(13, 12) * 4 ** (j - 1) * (1 - Fraction(1, 4 ** (i - 1))))
            * 64 ** (i - 1),
            "N_c",
        )
        leaves = 64 ** (i - 1)
        return {
            "processors": total,
            "leaves": leaves,
            "UT64x8": units,
            "chips": chips,
            "switches": chips + leaves * 3 * 4 ** (j - 2),
        }
    total = 64**i  # Eq 3.8
    bottom = total // 64
    units = _whole((1 - Fraction(1, 4 ** (i - 1))) * total / 768, "N_unit")  # Eq 3.9
    chips = _whole((Fraction(1, 16) + (1 - Fraction(1, 4 ** (i - 1))) / 48) * 13 * total, "N_c")
    return {
        "processors": total,
        "UT64x2": bottom,
        "UT64x8": units,
        "chips": chips,
        "switches": chips + bottom * 32,  # 16 alternate-mode up chips and 16 level-1 chips
    }


def transit_chips(params: TransitParams) -> int:
    """RN1 chips by the seed's closed formula (Eq 4.17, 4.29, 4.40)."""
    return transit_counts(params)["chips"]


def size(params: TransitParams) -> tuple[int, int]:
    counts = transit_counts(params)
    return counts["switches"], counts["processors"]


# ---- addresses ----------------------------------------------------------------------------------


def address(params: TransitParams, processor: int) -> tuple[tuple[int, ...], int | None]:
    """The address C.P of a processor (§3.8.1): C one byte per unit-tree layer, root first,
    bits 7:6 / 5:4 / 3:2 the level-3 / 2 / 1 directions and bits 1:0 zero; P the position in
    the leaf, j 2-bit slices from the top (None in a full tree). Capped: a leading byte whose
    top slice is the copy (the digest's reading A8). Bidelta: P alone, one byte per stack,
    each stack's stage digits from the top."""
    if params.form == "bidelta":
        digits = _digits(processor, 4, sum(params.stacks))
        packed, start = [], 0
        for stages in params.stacks:
            packed.append(_slices(digits[start : start + stages]))
            start += stages
        return tuple(packed), None
    if params.form == "hybrid":
        leaf, x = divmod(processor, leaf_processors(params.leaf_stages))
        j = params.leaf_stages
        first, rest = divmod(x, 4 ** (j - 1))
        p = _slices((first, *_digits(rest, 4, j - 1)))
        copy, leaf = divmod(leaf, 64**params.ut_layers)
        c = tuple(_layer_byte(d) for d in _digits(leaf, 64, params.ut_layers))
        # a capped network's four copies: an extra leading byte, the copy in its top slice
        return ((copy << 6, *c) if params.cap else c), p
    return tuple(_layer_byte(d) for d in _digits(processor, 64, params.ut_layers)), None


def _digits(value: int, base: int, count: int) -> tuple[int, ...]:
    """``count`` base-``base`` digits of ``value``, most significant first."""
    return tuple((value // base ** (count - 1 - t)) % base for t in range(count))


def _slices(digits: tuple[int, ...]) -> int:
    """2-bit digits packed into a byte from the top (slice 0 = bits 7:6)."""
    return sum(d << (6 - 2 * t) for t, d in enumerate(digits))


def _layer_byte(child: int) -> int:
    """A unit tree's byte of C for its child ``child`` (0..63): level-3, 2, 1 digits."""
    return _slices(_digits(child, 4, 3))


# ---- wiring -------------------------------------------------------------------------------------


@dataclass
class _Switch:
    name: str
    position: dict[str, Any]
    radix: int
    #: per input: whether it swallows the head byte (set as the input is wired)
    swallow: list[bool]
    free: int = 0  # the next input a fill hands out


class _Netlist:
    """Chips, one-way channels and attachments, collected before the plan is written (a
    switch's per-input swallows are known only once its inputs are wired)."""

    def __init__(self) -> None:
        self.switches: list[_Switch] = []
        self.channels: list[tuple[int, int, int, int]] = []  # (switch, out port, switch, in)
        self.attachments: list[tuple[int, int, int, str]] = []  # (endpoint, switch, port, mode)
        self.unused: list[tuple[int, int, str]] = []
        self.chips = 0

    def _switch(self, name: str, position: dict[str, Any], radix: int) -> int:
        self.switches.append(_Switch(name, position, radix, [False] * radix))
        return len(self.switches) - 1

    def standard(self, name: str, position: dict[str, Any], reads: int) -> int:
        """A standard-mode chip reading slice ``reads``: one 8-port switch."""
        chip, self.chips = self.chips, self.chips + 1
        return self._switch(name, {**position, "chip": chip, "mode": "standard", "slice": reads}, 8)

    def alternate(self, name: str, position: dict[str, Any], reads: int) -> tuple[int, int]:
        """An alternate-mode chip: two 4-port halves sharing its chip id."""
        chip, self.chips = self.chips, self.chips + 1
        return tuple(
            self._switch(
                f"{name}{'ab'[half]}",
                {**position, "chip": chip, "half": half, "mode": "alternate", "slice": reads},
                4,
            )
            for half in (0, 1)
        )

    def output(self, switch: int, direction: int, wire: int = 0) -> int:
        """The port of wire ``wire`` of ``direction`` (a half has one wire per direction)."""
        return 2 * direction + wire if self.switches[switch].radix == 8 else direction

    def take(self, switch: int, swallow: bool = False) -> int:
        """The next free input of ``switch``, swallowing or not."""
        entry = self.switches[switch]
        port, entry.free = entry.free, entry.free + 1
        if port >= entry.radix:
            raise ValueError(f"{entry.name}: more than {entry.radix} inputs wired")
        entry.swallow[port] = swallow
        return port

    def channel(self, switch: int, port: int, to: int, swallow: bool = False) -> None:
        self.channels.append((switch, port, to, self.take(to, swallow)))

    def finish_unused(self, switches: list[int]) -> None:
        """The inputs of ``switches`` no fill reached face nothing (the root's from-above)."""
        for s in switches:
            entry = self.switches[s]
            self.unused.extend((s, p, "in") for p in range(entry.free, entry.radix))
            entry.free = entry.radix

    def emit(self, builder: PlanBuilder) -> None:
        """Write the switches (each port's role from what its output faces), channels,
        attachments and unused sides into ``builder``."""
        roles = [["up"] * s.radix for s in self.switches]  # an unused output: the root's up
        for s, p, to, _ in self.channels:
            kind, dest = self.switches[s].position["kind"], self.switches[to].position["kind"]
            roles[s][p] = "up" if dest == "up" else "side" if kind == "up" else "down"
        for _, s, p, mode in self.attachments:
            if mode == "out":
                roles[s][p] = "local"
        for index, entry in enumerate(self.switches):
            ports = [
                Port(role, group=p // 2 if entry.radix == 8 else p)
                for p, role in enumerate(roles[index])
            ]
            builder.add_switch(entry.name, {**entry.position, "swallow": entry.swallow}, ports)
        for s, p, to, q in self.channels:
            builder.channel(s, p, to, q, 1)
        for endpoint, s, p, mode in self.attachments:
            builder.attach(endpoint, s, p, f"p{endpoint}", mode=mode)
        for s, p, side in self.unused:
            builder.leave_unused(s, p, side)


class _Delta:
    """A dilated radix-4 delta network's stages after the first: groups of chips, each group
    reached by one direction of the group before; the last stage's nodes (4 outputs each)
    served by two alternate-mode halves on two chips."""

    def __init__(self, net: _Netlist, name: str, position: dict[str, Any]):
        self.net, self.name, self.position = net, name, position

    def build(
        self,
        first: list[int],
        groups: int,
        stages: int,
        reads: Callable[[int], tuple[int, bool]],
    ) -> list[tuple[int, int]]:
        """Wire stages 2..``stages`` after the single first-stage group ``first`` (its
        directions 0..``groups``-1 lead into this network); ``reads(t)`` is stage t's slice
        and whether its inputs swallow. Returns per final node the halves (half 0, half 1)."""
        net = self.net
        current = [first]  # per group at this stage: its chips
        directions = groups
        for t in range(2, stages + 1):
            slice_, swallow = reads(t)
            size = len(current[0]) // 4
            if t < stages:
                nxt = [
                    [
                        net.standard(
                            f"{self.name}s{t}g{g}c{x}",
                            {**self.position, "stage": t, "group": g, "index": x},
                            slice_,
                        )
                        for x in range(size)
                    ]
                    for g in range(len(current) * directions)
                ]
            else:
                nodes = len(current) * directions
                halves = [
                    net.alternate(
                        f"{self.name}s{t}c{c}",
                        {**self.position, "stage": t, "index": c},
                        slice_,
                    )
                    for c in range(nodes)
                ]
                # node f: half 0 on chip f, half 1 on chip f - 1
                nxt = [[halves[f][0], halves[(f - 1) % nodes][1]] for f in range(nodes)]
            for g, chips in enumerate(current):
                for x, chip in enumerate(chips):
                    for d in range(directions):
                        for w in (0, 1):
                            target = nxt[g * directions + d]
                            to = target[(2 * x + w) % size] if t < stages else target[w]
                            net.channel(chip, net.output(chip, d, w), to, swallow)
            current, directions = nxt, 4
        return [tuple(node) for node in current]


def _stage_one(net: _Netlist, name: str, position: dict[str, Any], chips: int) -> list[int]:
    return [
        net.standard(f"{name}s1c{x}", {**position, "stage": 1, "group": 0, "index": x}, 0)
        for x in range(chips)
    ]


def _inject_and_eject(
    net: _Netlist, first: list[int], nodes: list[tuple[int, int]], processors: list[int]
) -> None:
    """Processor ``processors[x]``'s outputs q = 2x + w into first-stage chip q mod C; its
    inputs from output x mod 4 of the two halves of final node x // 4."""
    for x, endpoint in enumerate(processors):
        for w in (0, 1):
            q = 2 * x + w
            chip = first[q % len(first)]
            net.attachments.append((endpoint, chip, net.take(chip), "in"))
            net.attachments.append((endpoint, nodes[x // 4][w], x % 4, "out"))


def _bidelta(net: _Netlist, params: TransitParams) -> None:
    h = sum(params.stacks)
    stack_of = [m for m, stages in enumerate(params.stacks) for _ in range(stages)]
    start = [sum(params.stacks[:m]) for m in range(len(params.stacks))]

    def reads(t: int) -> tuple[int, bool]:
        m = stack_of[t - 1]
        return t - 1 - start[m], t - 1 == start[m] and m > 0

    position = {"kind": "bidelta"}
    first = _stage_one(net, "b", position, 4 ** (h - 1))
    nodes = _Delta(net, "b", position).build(first, 4, h, reads)
    _inject_and_eject(net, first, nodes, list(range(4**h)))


class _Leaf:
    """A bidelta leaf cluster B_n: stage 1 with 6 processor inputs and 2 fat-tree inputs per
    chip (direction 11 goes to the fat tree), stages 2..j in three sub-clusters."""

    def __init__(self, net: _Netlist, index: int, j: int):
        n = leaf_processors(j)
        position = {"kind": "leaf", "unit": index}
        name = f"leaf{index}"
        self.first = _stage_one(net, name, position, 4 ** (j - 1))
        nodes = _Delta(net, name, position).build(self.first, 3, j, lambda t: (t - 1, False))
        _inject_and_eject(net, self.first, nodes, list(range(index * n, (index + 1) * n)))
        #: the up wires: (chip, port) of every stage-1 chip's two direction-11 outputs
        self.up = [(chip, net.output(chip, 3, w)) for chip in self.first for w in (0, 1)]


class _UnitTree:
    """A unit tree (UT64x8, or UT64x2 with the processors as its leaves): its up chips, down
    levels 1..3 and the fills of their inputs."""

    def __init__(
        self, net: _Netlist, name: str, position: dict[str, Any], small: bool, up: tuple[int, bool]
    ):
        self.net, self.small = net, small
        position = {"block": "UT64x2" if small else "UT64x8", **position}
        up_slice, up_swallow = up
        self.up_swallow = up_swallow
        if small:  # alternate mode: level-1 node m's two up halves on chips m and m + 1
            chips = [
                net.alternate(f"{name}u{c}", {**position, "kind": "up", "index": c}, up_slice)
                for c in range(16)
            ]
            #: per level-1 node: its up chips (halves)
            self.up_of_node = [[chips[m][0], chips[(m - 1) % 16][1]] for m in range(16)]
            downs = [
                net.alternate(
                    f"{name}l1c{c}", {**position, "kind": "down", "level": 1, "index": c}, 2
                )
                for c in range(16)
            ]
            #: per level-1 node: its two halves, on the chips of a pair
            self.level1 = [[downs[m][0], downs[m ^ 1][1]] for m in range(16)]
            per_l2, per_l3 = 3, 8
        else:
            ups = [
                net.standard(f"{name}u{c}", {**position, "kind": "up", "index": c}, up_slice)
                for c in range(64)
            ]
            self.up_of_node = [ups[4 * m : 4 * m + 4] for m in range(16)]
            self.level1 = [
                [
                    net.standard(
                        f"{name}l1n{m}c{c}",
                        {**position, "kind": "down", "level": 1, "node": m, "index": c},
                        2,
                    )
                    for c in range(4)
                ]
                for m in range(16)
            ]
            per_l2, per_l3 = 12, 32
        self.level2 = [
            [
                net.standard(
                    f"{name}l2n{m}c{c}",
                    {**position, "kind": "down", "level": 2, "node": m, "index": c},
                    1,
                )
                for c in range(per_l2)
            ]
            for m in range(4)
        ]
        self.level3 = [
            net.standard(f"{name}l3c{c}", {**position, "kind": "down", "level": 3, "index": c}, 0)
            for c in range(per_l3)
        ]
        self._fills: dict[int, int] = {}  # per node (by id of its chip list): wires taken
        self._wire_internal()

    def fill(self, chips: list[int], swallow: bool) -> tuple[int, int]:
        """The next input of a node's round-robin fill: wire q to chip q mod T."""
        key = id(chips)
        q = self._fills.get(key, 0)
        self._fills[key] = q + 1
        chip = chips[q % len(chips)]
        return chip, self.net.take(chip, swallow)

    def _wire_internal(self) -> None:
        net = self.net
        # laterals (swallow: the rest of RU is dropped), then the down links from the level above
        for m, ups in enumerate(self.up_of_node):
            for chip in ups:
                for w in range(2 if not self.small else 1):
                    for d, node in (
                        (0, self.level1[m]),
                        (1, self.level2[m // 4]),
                        (2, self.level3),
                    ):
                        to, port = self.fill(node, True)
                        net.channels.append((chip, net.output(chip, d, w), to, port))
        for chip in self.level3:
            for d in range(4):
                for w in (0, 1):
                    to, port = self.fill(self.level2[d], False)
                    net.channels.append((chip, net.output(chip, d, w), to, port))
        for m, node in enumerate(self.level2):
            for chip in node:
                for d in range(4):
                    for w in (0, 1):
                        to, port = self.fill(self.level1[4 * m + d], False)
                        net.channels.append((chip, net.output(chip, d, w), to, port))

    def up_wires(self) -> list[tuple[int, int]]:
        """The direction-11 outputs toward the layer above."""
        wires = []
        for ups in self.up_of_node:
            for chip in ups:
                wires.extend(
                    (chip, self.net.output(chip, 3, w)) for w in range(1 if self.small else 2)
                )
        return wires

    def leaf_inputs(self, child: int, wire: int) -> tuple[int, int]:
        """Where wire ``wire`` (0..7) of leaf channel ``child`` lands: up chip
        4 * (child // 4) + wire mod 4 of its level-1 group, 2 wires each."""
        chip = self.up_of_node[child // 4][wire % 4]
        return chip, self.net.take(chip, self.up_swallow)

    def down_wires(self, child: int) -> list[tuple[int, int]]:
        """The 8 outputs of level-1 node child // 4 toward child ``child`` (UT64x8)."""
        d = child % 4
        return [
            (chip, self.net.output(chip, d, w)) for chip in self.level1[child // 4] for w in (0, 1)
        ]

    def from_above(self) -> tuple[int, int]:
        """The next level-3 input from the layer above (swallowing: a new unit tree's byte)."""
        return self.fill(self.level3, True)


def _up_rule(form: str, layer: int) -> tuple[int, bool]:
    """The slice an up chip of unit-tree layer ``layer`` reads, and whether its inputs
    swallow: layer u reads slice u mod 4 above a hybrid's leaf, u - 1 in a full tree, a new
    RU byte every fourth layer."""
    offset = 1 if form == "hybrid" else 0
    index = layer - 1 + offset
    return index % 4, layer > 1 and index % 4 == 0


def _tree(net: _Netlist, params: TransitParams) -> None:
    """Leaves (hybrid) or UT64x2s (full), then the UT64x8 layers: layer u's stacks each span
    64^u leaves (64 children); wire q of a child's up wires goes to unit tree q mod N_U of
    its stack, and unit tree x's 8 wires down to a child go to that child's unit (8x + r)."""
    hybrid = params.form == "hybrid"
    if hybrid:
        j = params.leaf_stages
        copies = 4 if params.cap else 1
        leaves = [_Leaf(net, b, j) for b in range(copies * 64**params.ut_layers)]
        children: list[Any] = leaves
        first_layer = 1
        per_stack = 4 ** (j - 2)
    else:
        children = [
            _UnitTree(net, f"t1u{b}", {"layer": 1, "unit": b}, True, _up_rule("full", 1))
            for b in range(64 ** (params.ut_layers - 1))
        ]
        # the processors of UT64x2 b: b * 64 + 4m + d
        for b, unit in enumerate(children):
            for m, ups in enumerate(unit.up_of_node):
                for d in range(4):
                    endpoint = b * 64 + 4 * m + d
                    for w in (0, 1):
                        net.attachments.append((endpoint, ups[w], net.take(ups[w]), "in"))
                        net.attachments.append((endpoint, unit.level1[m][w], d, "out"))
        children = [[unit] for unit in children]  # stacks of one
        first_layer = 2
        per_stack = 4
    top = children
    for layer in range(first_layer, params.ut_layers + 1):
        rule = _up_rule(params.form, layer)
        block = "UT64x8c" if params.cap and layer == params.ut_layers else "UT64x8"
        stacks = []
        for s in range(len(children) // 64):
            units = [
                _UnitTree(
                    net,
                    f"t{layer}s{s}u{x}",
                    {"layer": layer, "stack": s, "unit": x, "block": block},
                    False,
                    rule,
                )
                for x in range(per_stack)
            ]
            for b in range(64):
                child = children[64 * s + b]
                _join(net, child, b, units, hybrid and layer == 1)
            stacks.append(units)
        children, top = stacks, stacks
        per_stack *= 16
    if params.cap:
        _cap(net, top, params.ut_layers)
        return
    # the top: up outputs and inputs from above face nothing
    for stack in top:
        for unit in stack:
            net.unused.extend((chip, port, "out") for chip, port in unit.up_wires())
            net.finish_unused(unit.level3)


def _cap(net: _Netlist, copies: list[list[_UnitTree]], layer: int) -> None:
    """The capped root over the top stacks of four copies (§3.3.3): unit tree x of each copy
    gets 16 cap chips; its up wires (128) become a fourth lateral into them, and a cap chip's
    direction d leads into level 3 of unit tree x of copy d (32 wires to each copy, its own
    included), reading the copy from the address's leading byte."""
    for s, stack in enumerate(copies):
        for x, unit in enumerate(stack):
            position = {"kind": "cap", "layer": layer, "stack": s, "unit": x, "block": "UT64x8c"}
            caps = [
                net.standard(f"t{layer}s{s}u{x}cap{c}", {**position, "index": c}, 0)
                for c in range(16)
            ]
            for q, (chip, port) in enumerate(unit.up_wires()):
                to = caps[q % 16]
                net.channels.append((chip, port, to, net.take(to, True)))
            for chip in caps:
                for d in range(4):
                    for w in (0, 1):
                        to, slot = copies[d][x].from_above()
                        net.channels.append((chip, net.output(chip, d, w), to, slot))


def _join(net: _Netlist, child: Any, b: int, units: list[_UnitTree], leaf: bool) -> None:
    """Wire child ``b`` of a stack (a leaf, or a stack of unit trees below) to the stack's
    unit trees ``units``: up wires round robin over them, 8 down wires from each."""
    n_units = len(units)
    if leaf:
        ups = child.up
    else:
        ups = [wire for unit in child for wire in unit.up_wires()]
        # consecutive wires from different unit trees of the child stack
        ups = [
            wire for r in range(len(ups) // len(child)) for wire in ups[r :: len(ups) // len(child)]
        ]
    landed = [0] * n_units
    for q, (chip, port) in enumerate(ups):
        unit = units[q % n_units]
        to, slot = unit.leaf_inputs(b, landed[q % n_units])
        landed[q % n_units] += 1
        net.channels.append((chip, port, to, slot))
    if any(count != 8 for count in landed):
        raise ValueError(f"child {b}: up wires per unit tree {landed}, not 8")
    for x, unit in enumerate(units):
        for r, (chip, port) in enumerate(unit.down_wires(b)):
            if leaf:
                first = child.first[(8 * x + r) % len(child.first)]
                net.channels.append((chip, port, first, net.take(first, True)))
            else:
                to, slot = child[(8 * x + r) % len(child)].from_above()
                net.channels.append((chip, port, to, slot))


# ---- symmetries ---------------------------------------------------------------------------------


def params_of(plan: Any) -> TransitParams:
    """The Transit parameters a plan was built from."""
    tp = plan.topology_params
    return TransitParams(
        tp["form"], tp["leaf_stages"], tp["ut_layers"], tuple(tp["stacks"]), tp["cap"]
    )


def address_digits(params: TransitParams, processor: int) -> tuple[int, ...]:
    """The 2-bit digits of a processor's address that routes toward it read, root first: a
    capped network's copy, each unit-tree byte's level-3, 2 and 1 digits, P's j digits (a
    bidelta: its stage digits)."""
    if params.form == "bidelta":
        return _digits(processor, 4, sum(params.stacks))
    c, p = address(params, processor)
    digits = [c[0] >> 6] if params.cap else []
    for byte in c[params.cap :]:
        digits.extend((byte >> 6, (byte >> 4) & 3, (byte >> 2) & 3))
    if p is not None:
        digits.extend((p >> 6 - 2 * t) & 3 for t in range(params.leaf_stages))
    return tuple(digits)


@functools.cache
def _address_table(params: TransitParams) -> tuple[tuple[int, ...], ...]:
    """:func:`address_digits` of every processor (the symmetries' candidates each read it)."""
    return tuple(address_digits(params, e) for e in range(size(params)[1]))


def digit_read(params: TransitParams, position: dict[str, Any]) -> int | None:
    """The index into :func:`address_digits` of the digit a chip's slice reads of the
    destination's address; None for the up chips (they read RU: the climb and the crossover).
    A leaf's stage-1 chip reads the route's first slice too, but as 11 (up), which no digit
    of P takes."""
    if params.form == "bidelta":
        return position["stage"] - 1
    kind = position["kind"]
    if kind == "cap":
        return 0
    if kind == "leaf":
        return params.cap + 3 * params.ut_layers + position["stage"] - 1
    if kind == "down":
        return params.cap + 3 * (params.ut_layers - position["layer"]) + 3 - position["level"]
    return None


def digit_permutation(plan: Any, digit: int, values: dict[int, int]) -> Symmetry:
    """Value v of address digit ``digit`` (:func:`address_digits`) to ``values[v]`` in every
    processor's address, the chips that read that digit sending direction v where they sent
    ``values[v]``; the switches and the rest of each port map follow from the processors'
    attachments along the channels (a chip's other directions and each output's wire kept,
    an input mapped with the channel into it). Refused (:class:`PlanError`) where the wiring
    treats the values apart: two images for one switch or input, or a swallow changed."""
    params = params_of(plan)
    name = f"digit {digit} " + " ".join(f"{v}->{values[v]}" for v in sorted(values))
    switches, endpoints = plan.switches, plan.endpoints
    digits = _address_table(params)
    where = {d: e for e, d in enumerate(digits)}
    endpoint = tuple(
        where[(*d[:digit], values.get(d[digit], d[digit]), *d[digit + 1 :])] for d in digits
    )
    out_link = {(link.src.switch, link.src.port): link for link in plan.links}
    switch: list[int | None] = [None] * len(switches)
    outputs: list[list[int | None]] = [[None] * s.radix for s in switches]
    inputs: list[list[int | None]] = [[None] * s.radix for s in switches]
    queue: list[int] = []

    def settle(table: list[list[int | None]], s: int, p: int, image: tuple[int, int]) -> None:
        if switch[s] is None:
            switch[s] = image[0]
            queue.append(s)
        if switch[s] != image[0] or table[s][p] not in (None, image[1]):
            raise PlanError(
                f"the transit symmetry {name!r} is no automorphism: {switches[s].name} has"
                " two images"
            )
        table[s][p] = image[1]

    for e, source in enumerate(endpoints):
        image = endpoints[endpoint[e]]
        for i, (a, b) in enumerate(zip(source.attachments, image.attachments, strict=True)):
            table = inputs if source.mode(i) == "in" else outputs
            settle(table, a.switch, a.port, (b.switch, b.port))
    for s in queue:  # grows as it goes
        read = digit_read(params, switches[s].position)
        wires = 2 if switches[s].radix == 8 else 1
        for p in range(switches[s].radix):
            direction, wire = divmod(p, wires)
            if read == digit:
                direction = values.get(direction, direction)
            settle(outputs, s, p, (switch[s], wires * direction + wire))
            link, image = out_link.get((s, p)), out_link.get((switch[s], outputs[s][p]))
            if link is not None and image is not None:
                settle(inputs, link.dst.switch, link.dst.port, (image.dst.switch, image.dst.port))
    if None in switch:
        raise PlanError(f"the transit symmetry {name!r} reaches not every switch")
    # inputs no channel reaches (the root's from above) in their order
    for entries in inputs:
        unreached = [p for p, image in enumerate(entries) if image is None]
        for p, q in zip(unreached, sorted(set(range(len(entries))) - set(entries)), strict=True):
            entries[p] = q
    for s, entries in enumerate(inputs):
        position, image = switches[s].position, switches[switch[s]].position
        if (position["slice"], digit_read(params, position)) != (
            image["slice"],
            digit_read(params, image),
        ) or any(position["swallow"][p] != image["swallow"][q] for p, q in enumerate(entries)):
            raise PlanError(
                f"the transit symmetry {name!r} is no automorphism: {switches[s].name}'s"
                " image reads another slice or swallows elsewhere"
            )
    return Symmetry(
        name,
        tuple(switch),
        tuple(map(tuple, outputs)),
        endpoint,
        in_port=tuple(map(tuple, inputs)),
    )


def transit_symmetries(plan: Any) -> tuple[Symmetry, ...]:
    """Per address digit, the first of its value permutations that the plan admits (an
    automorphism, see :func:`digit_permutation`): the cycle through its values (a unit tree's
    level-1 and most level-3 digits, a cap's copy, a bidelta's stages, a leaf's top digit),
    the exchange of its pairs (0 2)(1 3) (a leaf's second stage, a UT64x2's level 3 under a
    UT64x8), the exchange of 0 and 3 (a level-2 digit: a level-2 node takes its children's
    laterals round robin over its 12 chips, 3 in a UT64x2, and only children 0 and 3 land
    alike); none for some digits (a UT64x2's level 2 under a UT64x8, a capped UT64x8's, a B48
    leaf's last stage). Each such map sends a route's digits through chips that read the same
    slice with the same swallows, so the routing commutes with it."""
    digits = _address_table(params_of(plan))
    result = []
    for digit in range(len(digits[0])):
        values = sorted({d[digit] for d in digits})
        n = len(values)
        candidates = [{v: values[(i + 1) % n] for i, v in enumerate(values)}]
        if n == 4:
            candidates += [{v: values[i ^ 2] for i, v in enumerate(values)}, {0: 3, 3: 0}]
        for values_map in candidates:
            try:
                symmetry = digit_permutation(plan, digit, values_map)
                symmetry_group(plan, [symmetry])
            except PlanError:
                continue
            result.append(symmetry)
            break
    return tuple(result)


def transit_summary(plan: Any) -> dict[str, Any]:
    """What ``check`` reports of a Transit plan, counted in it: RN1 chips (an alternate-mode
    chip's two halves are one), unit trees by kind and leaf clusters (by their processors),
    beside the chips the seed's formula gives."""
    chips: set[int] = set()
    units: dict[str, set[tuple]] = {"UT64x2": set(), "UT64x8": set(), "UT64x8c": set()}
    leaves: set[int] = set()
    for switch in plan.switches:
        position = switch.position
        chips.add(position["chip"])
        if "block" in position:
            units[position["block"]].add(
                (position["layer"], position.get("stack"), position["unit"])
            )
        elif position["kind"] == "leaf":
            leaves.add(position["unit"])
    params = plan.topology_params
    summary: dict[str, Any] = {
        "form": params["form"],
        "chips": len(chips),
        "chips_by_formula": transit_chips(
            TransitParams(
                params["form"],
                params["leaf_stages"],
                params["ut_layers"],
                tuple(params["stacks"]),
                params["cap"],
            )
        ),
        "unit_trees": {kind: len(found) for kind, found in units.items() if found},
    }
    if leaves:
        summary["leaves"] = {f"B{leaf_processors(params['leaf_stages'])}": len(leaves)}
    if params["form"] == "bidelta":
        summary["stages"] = sum(params["stacks"])
    return summary


@topology("transit", parse=parse, size=size, routings=("transit",))
def build(spec: FabricSpec):
    params: TransitParams = spec.params
    net = _Netlist()
    if params.form == "bidelta":
        _bidelta(net, params)
    else:
        _tree(net, params)
    builder = PlanBuilder()
    net.emit(builder)
    topology_params = {
        "form": params.form,
        "leaf_stages": params.leaf_stages,
        "ut_layers": params.ut_layers,
        "stacks": list(params.stacks),
        "cap": params.cap,
    }
    return finish_plan(builder, spec, topology_params, {"form": params.form})
