"""DORT: dimension-order routing for the nDT twin torus, with the internal-link VC classes.

Each nDT node is two cards (switches) joined by an internal link; every external port sits on one
of them (``card0`` lists the Card0 ports). DORT (ndt.md §3.3) routes dimensions in ascending order
along the shorter way round each ring; when the chosen port is on the other card, or the
destination PE is, the packet first crosses the internal link.

Ties (a ring of even ``k_i`` at distance ``k_i / 2``) go to the port on Card0 when the dimension's
two ports sit on different cards, and toward + otherwise. That is the §1.4 trap: under CBest's
layout (``d_c-`` on Card0) ties in ``d_c`` must go to −, or the internal link carries 1.5 to 3.7
times more transit traffic. ``tie: plus`` (every tie toward +, the 3DT paper's convention) is
available to reproduce the mismatch.

VCs (ndt.md §3.2, §4.3): an external hop takes VC 0 ("upper") if the destination coordinate is
above the current one, else VC 1 ("lower"). An internal hop takes the VC of its class:

- ``ch``: the next dimension's port is on the other card (dimension change, or injection);
- ``ring_upper`` / ``ring_lower``: the next dimension is *split* (its two ports on different
  cards), so the internal link is part of that dimension's ring; upper/lower as on external links;
- ``pe``: the destination PE is on the other card of this node.

Under CBest only the central dimension of an odd ``n`` is split, which is what the thesis
proves deadlock-free with 4 internal VCs. A configuration splitting several dimensions takes a
ring pair per split dimension (``ring_upper_<d>`` / ``ring_lower_<d>``; ``rings:
per_dimension``, its default): 1 + 2s + 1 internal VCs for s split dimensions, 2n+1 when every
dimension is split and no ``ch`` class is left (ndt.md §4.3). ``rings: shared`` keeps one pair
for every split dimension (CBest's VC rules): on such configurations the CDG check finds the
cycle (ndt.md §4.5, "SC0 with CBest's VC rules") and zfabric refuses the fabric.

Routing options: ``rings``; ``internal_vcs`` maps each class in use to a VC, or to a list of
VCs the class may take (merging classes reproduces the deadlocks of ndt.md §4.2);
``external_vcs`` is the VC count of external links: 2 (default) or any even count up to 16
splits them into the upper and lower classes, ``external_vcs / 2`` VCs each
(:func:`~zfabric.routing.base.class_vcs`), and 1 puts every external hop on VC 0 (the 1-VC
ring cycle); ``tie``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..bubble import FLOW_CONTROLS
from ..errors import SpecError
from ..fields import Reader, choice, describe
from ..symmetry import Symmetry
from ..topologies.torus import translation
from .base import MAX_VCS, Decision, Hop, Injection, RoutingFunction, class_vcs, routing
from .dor import dateline_vc, ring_direction

__all__ = [
    "DORT",
    "INTERNAL_CLASSES",
    "RINGS",
    "ring_class",
    "ring_classes",
    "ring_vc_use",
    "split_dims",
    "internal_classes",
    "default_internal_vcs",
    "internal_link_vcs",
    "internal_class_vcs",
    "internal_vc_option",
    "external_classes",
]

#: internal-link traffic classes, in Alg 2's VC order (ndt.md §8.4)
INTERNAL_CLASSES = ("ch", "ring_upper", "ring_lower", "pe")
TIES = ("card0", "plus")
#: how the split dimensions' rings share the internal link: one upper/lower pair for all of
#: them, or a pair each (the thesis's 2n+1-VC scheme)
RINGS = ("shared", "per_dimension")


def split_dims(card0: Any, n: int) -> tuple[int, ...]:
    """Dimensions whose two ports sit on different cards."""
    ports = {(dim, sign) for dim, sign in card0}
    return tuple(d for d in range(n) if ((d, 1) in ports) != ((d, -1) in ports))


def _is_class(name: str) -> bool:
    """A class of some port configuration (one in use is checked elsewhere)."""
    return name in INTERNAL_CLASSES or re.fullmatch(r"ring_(upper|lower)_\d+", name) is not None


def default_rings(card0: Any, n: int) -> str:
    """A pair per split dimension where several are split (the only deadlock-free choice
    there), else the one shared pair."""
    return "per_dimension" if len(split_dims(card0, n)) > 1 else "shared"


def ring_class(dim: int, upper: bool, per_dimension: bool) -> str:
    """The internal class of a hop on split dimension ``dim``'s ring."""
    name = "ring_upper" if upper else "ring_lower"
    return f"{name}_{dim}" if per_dimension else name


def ring_classes(internal_vcs: dict[str, Any], dim: int) -> tuple[str, str]:
    """The names of split dimension ``dim``'s upper and lower ring classes in ``internal_vcs``
    (a pair of its own, or the one pair every split dimension shares)."""
    per_dimension = ring_class(dim, True, True) in internal_vcs
    return ring_class(dim, True, per_dimension), ring_class(dim, False, per_dimension)


def ring_vc_use(internal_vcs: dict[str, Any], dim: int) -> tuple[list[int], list[str]]:
    """Split dimension ``dim``'s ring on the internal link: the VCs its upper and lower classes
    take, ascending, and the other classes that take one of them too."""
    classes = internal_class_vcs(internal_vcs)
    ring = ring_classes(internal_vcs, dim)
    vcs = sorted({vc for name in ring for vc in classes[name]})
    others = [name for name, taken in classes.items() if name not in ring and set(taken) & set(vcs)]
    return vcs, others


def internal_classes(card0: Any, n: int, rings: str | None = None) -> tuple[str, ...]:
    """The internal-link classes DORT uses under this port configuration, in VC order."""
    split = split_dims(card0, n)
    per_dimension = (rings or default_rings(card0, n)) == "per_dimension"
    used = []
    if len(split) < n:  # an unsplit dimension: a PE on the other card must change card to use it
        used.append("ch")
    for dim in split if per_dimension else split[:1]:
        used += [ring_class(dim, upper, per_dimension) for upper in (True, False)]
    return (*used, "pe")


def default_internal_vcs(card0: Any, n: int, rings: str | None = None) -> dict[str, int]:
    """Alg 2 numbering: {ch 0, ring_upper 1, ring_lower 2, pe 3}, or {ch 0, pe 1} with no split;
    with a pair per split dimension, the pairs in dimension order between ``ch`` and ``pe``."""
    if (rings or default_rings(card0, n)) == "per_dimension":
        return {name: vc for vc, name in enumerate(internal_classes(card0, n, rings))}
    if split_dims(card0, n):
        return dict(zip(INTERNAL_CLASSES, range(4), strict=True))
    return {"ch": 0, "pe": 1}


def internal_class_vcs(internal_vcs: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The ``internal_vcs`` option as class -> the VCs it may take, ascending (the order the
    switch tries them in); a single VC as a 1-tuple."""
    return {
        name: (vcs,) if isinstance(vcs, int) else tuple(sorted(vcs))
        for name, vcs in internal_vcs.items()
    }


def internal_link_vcs(internal_vcs: dict[str, Any]) -> int:
    """VCs the internal link needs: one past the highest VC any class takes."""
    return 1 + max(max(vcs) for vcs in internal_class_vcs(internal_vcs).values())


def external_classes(external_vcs: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The external-link VCs of the upper and lower classes (both VC 0 with one external VC)."""
    if external_vcs == 1:
        return (0,), (0,)
    return class_vcs(0, external_vcs // 2), class_vcs(1, external_vcs // 2)


def internal_vc_option(value: Any, path: str) -> int | list[int]:
    """One class's internal VC(s) in a spec: an index, or a non-empty list of distinct
    indices."""
    want = f"a VC index in 0..{MAX_VCS - 1} or a non-empty list of distinct ones"

    def index(item: Any, where: str) -> int:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < MAX_VCS:
            raise SpecError(where, f"must be {want}, got {describe(item)}")
        return item

    if not isinstance(value, list):
        return index(value, path)
    if not value:
        raise SpecError(path, f"must be {want}, got {describe(value)}")
    vcs = [index(item, f"{path}[{i}]") for i, item in enumerate(value)]
    for i, vc in enumerate(vcs):
        if vc in vcs[:i]:
            raise SpecError(f"{path}[{i}]", f"duplicate VC {vc} (already {path}[{vcs.index(vc)}])")
    return vcs


def _external_vcs(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VCS:
        raise SpecError(path, f"must be an integer in 1..{MAX_VCS}, got {describe(value)}")
    if value > 1 and value % 2:
        raise SpecError(
            path,
            f"must be 1 or even (the upper and lower dateline classes get half each), got {value}",
        )
    return value


def bubble_internal_vcs(card0: Any, n: int, rings: str | None = None) -> dict[str, int]:
    """Under bubble flow control, the classes in use one VC each but for a split dimension's
    upper and lower ring classes, which share one: the thesis's CH, RING and PE (ndt.md §4.3)."""
    result: dict[str, int] = {}
    for name in internal_classes(card0, n, rings):
        lower = name.startswith("ring_lower")
        result[name] = (
            result[name.replace("lower", "upper")] if lower else len(set(result.values()))
        )
    return result


def _bubble_params(reader: Reader, card0: Any, n: int, params: dict[str, Any]) -> dict[str, Any]:
    """``flow_control: bubble``'s parameters (:mod:`zfabric.bubble`): one VC per external link,
    each split dimension's ring on one internal VC of its own; a spec breaking that is
    reported against the key that breaks it."""
    why = "flow_control bubble"
    split = split_dims(card0, n)
    if len(split) > 1:
        names = ", ".join(f"d{dim}" for dim in split)
        reader.report(
            SpecError(
                reader.key("flow_control"),
                f"bubble needs at most one dimension split across the cards (each internal"
                f" link on one ring), not {len(split)} ({names})",
            )
        )
        return {}
    external = params.get("external_vcs", 1)
    if external != 1:
        reader.report(
            SpecError(reader.key("external_vcs"), f"{external} with {why}, which needs 1")
        )
    internal_vcs = params.get("internal_vcs") or bubble_internal_vcs(card0, n, params.get("rings"))
    for dim in split:
        vcs, others = ring_vc_use(internal_vcs, dim)
        if len(vcs) != 1:
            ring = ring_classes(internal_vcs, dim)
            reader.report(
                SpecError(
                    reader.key("internal_vcs"),
                    f"{ring[0]} and {ring[1]} with {why} must take one VC together (d{dim}'s"
                    f" ring on the internal link), not {vcs}",
                )
            )
        elif others:
            reader.report(
                SpecError(
                    reader.key("internal_vcs"),
                    f"{others[0]} takes VC {vcs[0]}, which d{dim}'s ring keeps to itself under"
                    f" {why}",
                )
            )
    return {"flow_control": "bubble", "external_vcs": 1, "internal_vcs": internal_vcs}


@routing("dort")
class DORT(RoutingFunction):
    """Ascending dimension order over the twin torus, one candidate, VC by class."""

    one_port = True

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        n = len(topology_params.k)
        params: dict[str, Any] = {}
        rings = None
        if reader.has("rings"):
            params["rings"] = rings = reader.get("rings", choice(list(RINGS)))
        if reader.has("internal_vcs"):
            used = internal_classes(topology_params.card0, n, rings)
            sub = reader.sub("internal_vcs")
            for name in sub.data:
                if name not in used and _is_class(name):
                    raise SpecError(
                        sub.key(name),
                        f"class {name!r} is not used by this port configuration "
                        f"(classes in use: {', '.join(used)})",
                    )
            missing = [name for name in used if name not in sub.data]
            if missing:  # a typo hint may only point at a key that is no class in use
                unknown = [str(name) for name in sub.data if name not in used]
                close = difflib.get_close_matches(missing[0], unknown, n=1)
                hint = (
                    f"; found unknown key {close[0]!r}: did you mean {missing[0]!r}?"
                    if close
                    else ""
                )
                raise SpecError(
                    sub.key(missing[0]),
                    f"missing required key (classes in use: {', '.join(used)}){hint}",
                )
            params["internal_vcs"] = {name: sub.get(name, internal_vc_option) for name in used}
            sub.finish()
        if reader.has("external_vcs"):
            params["external_vcs"] = reader.get("external_vcs", _external_vcs)
        if reader.has("tie"):
            params["tie"] = reader.get("tie", choice(list(TIES)))
        if reader.get("flow_control", choice(FLOW_CONTROLS), FLOW_CONTROLS[0]) == "bubble":
            params |= _bubble_params(reader, topology_params.card0, n, params)
        return params

    def __init__(self, view):
        super().__init__(view)
        params = self.params
        k = tuple(params["k"])
        n = len(k)
        card0 = {(dim, sign) for dim, sign in params["card0"]}
        self.split = split = set(split_dims(card0, n))
        internal_vcs = internal_class_vcs(params["internal_vcs"])
        per_dimension = any(ring_class(d, True, True) in internal_vcs for d in split)
        upper, lower = external_classes(params.get("external_vcs", 2))
        if params.get("tie", "card0") == "card0":
            tie = [(1 if (d, 1) in card0 else -1) if d in split else 1 for d in range(n)]
        else:
            tie = [1] * n
        switches = view.switches
        self.coords = [tuple(s.position["coords"]) for s in switches]
        self.card = [s.position["card"] for s in switches]
        self.source = [
            (e.attachments[0].switch, e.attachments[0].port) for e in view.plan.endpoints
        ]
        self.home = [switch for switch, _ in self.source]
        self.dst_coords = [self.coords[h] for h in self.home]
        self.dst_card = [self.card[h] for h in self.home]
        #: per endpoint, the delivery hop at its own switch
        self.deliver = [(self.local_hop(h, e),) for e, h in enumerate(self.home)]
        #: per switch: the internal hop toward the destination PE on the other card
        self.to_pe: list[tuple[Hop, ...]] = []
        #: per switch, per dimension, per destination coordinate: the hop (None where equal)
        self.table: list[list[list[tuple[Hop, ...] | None]]] = []
        # a row depends only on the switch's ports and its coordinate in the row's dimension,
        # so switches with the same ports (the cards of one side) share their rows
        rows_of: dict[tuple, dict[tuple[int, int], list[tuple[Hop, ...] | None]]] = {}

        def row(ports: tuple, internal: int, dim: int, here: int) -> list[tuple[Hop, ...] | None]:
            """Per destination coordinate in ``dim``: the hop (None where equal)."""
            on_card = {(p.dim, p.sign): i for i, p in enumerate(ports) if p.role == "external"}
            hops: list[tuple[Hop, ...] | None] = []
            for dst in range(k[dim]):
                sign = ring_direction(here, dst, k[dim], tie=tie[dim])
                if not sign:
                    hops.append(None)
                    continue
                is_upper = dateline_vc(here, dst) == 0
                port = on_card.get((dim, sign))
                if port is not None:
                    hops.append((Hop(port, upper if is_upper else lower),))
                elif dim in split:
                    ring = ring_class(dim, is_upper, per_dimension)
                    hops.append((Hop(internal, internal_vcs[ring]),))
                else:
                    hops.append((Hop(internal, internal_vcs["ch"]),))
            return hops

        for switch in switches:
            here = self.coords[switch.id]
            internal = view.ports_by_role[switch.id]["internal"][0]
            self.to_pe.append((Hop(internal, internal_vcs["pe"]),))
            shared = rows_of.setdefault(switch.ports, {})  # by (dim, coordinate)
            rows = []
            for dim in range(n):
                if (dim, here[dim]) not in shared:
                    shared[dim, here[dim]] = row(switch.ports, internal, dim, here[dim])
                rows.append(shared[dim, here[dim]])
            self.table.append(rows)

    def port_symmetries(self) -> tuple[Symmetry, ...]:
        """The translations by one in every dimension: a hop's port is read from the
        destination's offset round each ring (a tie going one fixed way per dimension) and the
        card's ports, alike on every node; its VC class reads the coordinates themselves (upper
        or lower), so they are no symmetry of the channels, which the proof walks in full. Only
        where each split dimension's upper and lower ring classes take as many internal VCs.
        ``dort_adaptive`` inherits it: its split between escape and adaptive VCs is per link
        role, which a translation keeps."""
        classes = internal_class_vcs(self.params["internal_vcs"])
        for dim in self.split:
            upper, lower = ring_classes(classes, dim)
            if len(classes[upper]) != len(classes[lower]):
                return ()
        plan = self.view.plan
        return tuple(translation(plan, dim, 1) for dim in range(len(self.params["k"])))

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        switch, port = self.source[src]
        return (Injection(switch, port, dst),)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        here, there = self.coords[switch], self.dst_coords[head]
        if here == there:
            if self.dst_card[head] == self.card[switch]:
                return Decision(self.deliver[head], head)
            return Decision(self.to_pe[switch], head)
        dim = 0
        while here[dim] == there[dim]:
            dim += 1
        return Decision(self.table[switch][dim][there[dim]], head)
