"""k-ary n-cube torus, or mesh (``wrap: false``, or ``kind: mesh``), with a size per dimension."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ..plan import PlanBuilder, Port
from ..spec import FabricSpec, Reader, boolean, int_list
from .base import finish_plan, topology

__all__ = ["TorusParams", "linear_index", "coordinates"]


@dataclass(frozen=True)
class TorusParams:
    k: tuple[int, ...]
    wrap: bool = True


def parse(reader: Reader, *, mesh: bool = False) -> TorusParams:
    k = reader.get("k", int_list(2))
    return TorusParams(k=k, wrap=False if mesh else reader.get("wrap", boolean, True))


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


@topology("torus", parse=parse, size=size, routings=("dor",))
def build(spec: FabricSpec):
    params: TorusParams = spec.params
    k, n = params.k, len(params.k)
    datelines = params.wrap and spec.routing_params.get("datelines", True)
    vcs = 2 if datelines else 1
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
        {"k": list(k), "wrap": params.wrap},
        {"k": list(k), "wrap": params.wrap, "datelines": datelines},
    )


topology("mesh", parse=parse_mesh, size=size, routings=("dor",), builds="torus")(build)
