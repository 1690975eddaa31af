"""k-ary n-cube torus, or mesh (``wrap: false``, or ``kind: mesh``), with a size per dimension;
the binary hypercube (``kind: hypercube``, ``n`` dimensions) is the 2-ary n-mesh.

``vcs`` counts VCs per dateline class on a torus (a link carries 2 x vcs: DOR's upper and lower
classes) and VCs per link on a mesh (one class: DOR on a mesh is deadlock-free with one VC, more
VCs only let packets pass a blocked one). Under ``duato`` these are the escape VCs, and the
routing's ``adaptive_vcs`` follow them on every link.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ..errors import SpecError
from ..fields import Reader, boolean, describe, int_list, integer
from ..plan import PlanBuilder, Port
from ..routing.base import MAX_VCS
from ..spec import FabricSpec
from ..symmetry import Symmetry, relabelled_ports
from .base import finish_plan, topology

__all__ = [
    "TorusParams",
    "HypercubeParams",
    "linear_index",
    "coordinates",
    "translation",
    "reflection",
]


@dataclass(frozen=True)
class TorusParams:
    k: tuple[int, ...]
    wrap: bool = True
    vcs: int = 1  # per dateline class on a torus, per link on a mesh


def _vcs(wrap: bool):
    """``vcs`` check: on a torus the two dateline classes share the link's :data:`MAX_VCS`."""
    most = MAX_VCS // 2 if wrap else MAX_VCS
    why = (
        f"VCs per dateline class: a torus link carries 2 x vcs, at most {MAX_VCS}"
        if wrap
        else f"VCs per mesh link, at most {MAX_VCS}"
    )

    def check(value, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise SpecError(path, f"must be an integer in 1..{most} ({why}), got {describe(value)}")
        return value

    return check


def parse(reader: Reader, *, mesh: bool = False) -> TorusParams:
    k = reader.get("k", int_list(2))
    wrap = False if mesh else reader.get("wrap", boolean, True)
    return TorusParams(k=k, wrap=wrap, vcs=reader.get("vcs", _vcs(wrap), 1))


@dataclass(frozen=True)
class HypercubeParams(TorusParams):
    """A 2-ary n-cube: one link per dimension between the two nodes, so a mesh of k = 2."""

    def notation(self) -> str:
        return f"(n={len(self.k)}, vcs={self.vcs})"


#: the largest hypercube a spec may ask for (its 2^n switches within the size limit)
MAX_HYPERCUBE_DIMENSIONS = 12


def parse_hypercube(reader: Reader) -> HypercubeParams:
    n = reader.get("n", integer(1, MAX_HYPERCUBE_DIMENSIONS))
    return HypercubeParams(k=(2,) * n, wrap=False, vcs=reader.get("vcs", _vcs(False), 1))


def parse_mesh(reader: Reader) -> TorusParams:
    """``kind: mesh`` is a torus with ``wrap: false`` (a ``wrap`` key there is unknown)."""
    return parse(reader, mesh=True)


def size(params: TorusParams) -> tuple[int, int]:
    nodes = math.prod(params.k)
    return nodes, nodes


def linear_index(coords: tuple[int, ...], k: tuple[int, ...]) -> int:
    """Mixed-radix index with dimension 0 least significant."""
    index = 0
    for c, radix in zip(reversed(coords), reversed(k), strict=True):
        index = index * radix + c
    return index


def coordinates(k: tuple[int, ...]) -> list[tuple[int, ...]]:
    """All coordinates in :func:`linear_index` order."""
    return [tuple(reversed(c)) for c in itertools.product(*(range(r) for r in reversed(k)))]


def _moved(plan, name: str, move, relabel) -> Symmetry:
    """The symmetry taking the switch at coordinates c to ``move(c)`` (and its endpoint along),
    each port to the one ``relabel`` names. A node of several switches (the nDT's two cards:
    switch ``cards * node + card``) keeps each card: the plan's ``card`` position says which."""
    k = tuple(plan.topology_params["k"])
    cards = len(plan.switches) // math.prod(k)
    switch = tuple(
        cards * linear_index(move(tuple(s.position["coords"])), k) + s.position.get("card", 0)
        for s in plan.switches
    )  # endpoint i sits at switch i
    return Symmetry(name, switch, relabelled_ports(plan, switch, relabel), switch)


def translation(plan, dim: int, shift: int) -> Symmetry:
    """Every switch ``shift`` places on in dimension ``dim`` (an automorphism of a torus, and of
    an nDT, whose nodes all have the same port layout)."""
    size = plan.topology_params["k"][dim]

    def move(c: tuple[int, ...]) -> tuple[int, ...]:
        return c[:dim] + ((c[dim] + shift) % size,) + c[dim + 1 :]

    return _moved(plan, f"translation d{dim} +{shift}", move, lambda switch, port: port)


def reflection(plan, dim: int) -> Symmetry:
    """Coordinate c of dimension ``dim`` to k - 1 - c, its + ports to - ports (a torus's and a
    mesh's automorphism)."""
    size = plan.topology_params["k"][dim]

    def move(c: tuple[int, ...]) -> tuple[int, ...]:
        return c[:dim] + (size - 1 - c[dim],) + c[dim + 1 :]

    def relabel(switch, port: Port) -> Port:
        if port.role == "external" and port.dim == dim:
            return Port("external", dim=dim, sign=-port.sign)
        return port

    return _moved(plan, f"reflection d{dim}", move, relabel)


@topology("torus", parse=parse, size=size, routings=("dor", "duato"))
def build(spec: FabricSpec):
    params: TorusParams = spec.params
    k, n = params.k, len(params.k)
    datelines = params.wrap and spec.routing_params.get("datelines", True)
    vcs = 2 * params.vcs if datelines else params.vcs
    vcs += spec.routing_params.get("adaptive_vcs", 0)  # duato's adaptive set, after the escape
    builder = PlanBuilder()
    port_of: list[dict[tuple[int, int], int]] = []
    for coords in coordinates(k):
        ports = [Port("local")]
        for dim, sign in itertools.product(range(n), (1, -1)):
            edge = coords[dim] == (k[dim] - 1 if sign > 0 else 0)
            if params.wrap or not edge:
                ports.append(Port("external", dim=dim, sign=sign))
        switch = builder.add_switch(
            "sw" + "_".join(map(str, coords)), {"coords": list(coords)}, ports
        )
        port_of.append({(p.dim, p.sign): i for i, p in enumerate(ports) if p.role == "external"})
        builder.attach(switch, switch, 0, name=f"ep{switch}")
    for switch, coords in enumerate(coordinates(k)):
        for dim in range(n):
            if coords[dim] + 1 < k[dim] or params.wrap:
                neighbour = list(coords)
                neighbour[dim] = (coords[dim] + 1) % k[dim]
                other = linear_index(tuple(neighbour), k)
                builder.connect(
                    switch, port_of[switch][(dim, 1)], other, port_of[other][(dim, -1)], vcs
                )
    return finish_plan(
        builder,
        spec,
        {"k": list(k), "wrap": params.wrap, "vcs": params.vcs},
        {"k": list(k), "wrap": params.wrap, "datelines": datelines, "vcs": params.vcs},
    )


topology("mesh", parse=parse_mesh, size=size, routings=("dor", "duato"), builds="torus")(build)
topology("hypercube", parse=parse_hypercube, size=size, routings=("dor", "duato"), builds="torus")(
    build
)
