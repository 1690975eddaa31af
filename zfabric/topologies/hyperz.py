"""HyperZ ``H_{d,h}(s_1..s_d; Q_1..Q_d)(Z_h)``: a Z-node at every vertex of a generalized
hypercube, side links between same-address switches at every level; HyperX is its h = 1 case.

After M. Adda, *HyperZ: Hyper Z-Tree Topology* (Preprints.org, 2023), §1. The Z-node is the
Znode builder's tree (:func:`~zfabric.topologies.znode.wire_tree`), under the reading that
Peratikou's Znode thesis (Portsmouth, 2014) confirms: the paper's ``Z_h(z; r; g)``
is the Znode's ``z`` (children per level-i zone, ``z_1`` processors per level-1 switch), ``R``
(switches per level-i zone, the paper's r_i) and ``psi`` (parallel links between a child and each
parent, the paper's g_i). So the §5.3 Z-node ``Z_2(8,4,8; 1,4,8; 1,2,2)`` is ``z: [8, 4, 8]``,
``R: [1, 4, 8]``, ``psi: [1, 2, 2]``: 256 processors, 16 internal ports on the busiest switch.

GHC (digest §1, rule of 001:L87-91 as corrected there): ``s_k`` Z-nodes per dimension k, every
dimension a complete graph K_{s_k}; Z-nodes whose coordinates differ in exactly one dimension k
are joined at every level i between the switches of equal flat address X_i, by ``q_ik``
parallel links; processors (level 0) have no side links. Every ``q_ik`` must be >= 1 here: the
escape sub-function of the adaptive routings crosses a dimension at whatever level a packet is
on (zfabric/routing/hyperz.py), so a level without side links in some dimension is refused.

Addressing ``(a_d..a_1; X_i)``: ``coords`` is (a_1, ..., a_d) in a switch's position (dimension
k at index k - 1, as the torus's coords), the Z-node's index is the mixed-radix number with a_1
least significant, and ``flat`` is X_i = zone * R_i + index. Processor Y of Z-node g is endpoint
``g * P_z + Y`` (P_z = prod(z)). Names write the coordinates most significant first, as the
paper does: ``h3.0.1s2_5`` is level 2, X_2 = 5 of Z-node (a_3, a_2, a_1) = (3, 0, 1).

Ports on every switch: the Znode's down ports then up ports, then the side ports, dimension 1
first, within a dimension the other coordinate values ascending, ``q_ik`` lanes each
(``Port("side", dim=k - 1, group=target coordinate)``).

Counts (Eq. 2, 001:L71-73): R_i = r_i * prod_{j>i} z_j switches per Z-node at level i (R_0 the
processors), N_i = R_i * prod_k s_k in the whole HyperZ. Port budget (001:L115): a level-i switch
has down + up + sum_k q_ik (s_k - 1) ports; each level must fit ``l_max`` (the paper's L_max; in
the fully regular case z_i = s_k = z, q_ik = q this is 2z + dq(z - 1) <= L_max). The paper's
"about 32 ports" for h = 3, d = 3, z = s = 8 (001:L123) is loose: the formula gives 37.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..fields import MAX_INTEGER, Reader, checked_entries, choice, describe, int_list, integer
from ..plan import PlanBuilder, Port
from ..routing.base import MAX_VCS
from ..spec import FabricSpec
from ..symmetry import Symmetry, relabelled_ports
from .base import finish_plan, topology
from .torus import coordinates, linear_index
from .znode import PATTERNS, ZnodeParams, validate, wire_tree

__all__ = ["HyperzParams", "side_port_base", "coordinate_permutation", "processor_permutation"]


@dataclass(frozen=True)
class HyperzParams:
    """``s`` per dimension (s_1 first), ``q[k][i - 1]`` = q_ik, the Z-node as a Znode."""

    s: tuple[int, ...]
    q: tuple[tuple[int, ...], ...]
    tree: ZnodeParams
    l_max: int = 64
    vcs: int = 1

    @property
    def d(self) -> int:
        return len(self.s)

    @property
    def h(self) -> int:
        return self.tree.n

    @property
    def znodes(self) -> int:
        """Z-nodes: prod_k s_k."""
        return math.prod(self.s)

    def per_znode(self, level: int) -> int:
        """Eq. 2's R_i: level-i switches of one Z-node (processors at level 0)."""
        if level == 0:
            return self.tree.zone_size
        return self.tree.R[level - 1] * self.tree.zones(level)

    def total(self, level: int) -> int:
        """Eq. 2's N_i = R_i * prod_k s_k: level-i nodes of the whole HyperZ."""
        return self.per_znode(level) * self.znodes

    @property
    def processors(self) -> int:
        return self.total(0)

    @property
    def switches(self) -> int:
        return sum(self.total(level) for level in range(1, self.h + 1))

    def side_ports(self, level: int) -> int:
        """sum_k q_ik (s_k - 1): a level-i switch's side ports."""
        return sum(q[level - 1] * (s - 1) for q, s in zip(self.q, self.s, strict=True))

    def radix(self, level: int) -> int:
        return self.tree.down_ports(level) + self.tree.up_ports(level) + self.side_ports(level)

    def notation(self) -> str:
        """The paper's ``H_{d,h}(s_1..s_d; Q_1..Q_d)(Z_h(z; r; g))`` (q_k alone when every level
        has q_k links), then the port budget and VCs."""

        def join(values: Sequence[int]) -> str:
            return ",".join(map(str, values))

        lanes = join(q[0] if len(set(q)) == 1 else f"({join(q)})" for q in self.q)
        tree = self.tree
        z = f"Z_{self.h}({join(tree.z)}; {join(tree.R)}; {join(tree.psi)})"
        return (
            f"H_{{{self.d},{self.h}}}({join(self.s)}; {lanes})({z}), l_max={self.l_max},"
            f" vcs={self.vcs}"
        )

    def ports(self, level: int, coords: Sequence[int]) -> list[Port]:
        """The ports of a level-``level`` switch of the Z-node at ``coords`` (module docstring)."""
        tree = self.tree
        ports = [
            Port("local" if level == 1 else "down", group=c)
            for c in range(tree.z[level - 1])
            for _ in range(tree.group_size(level))
        ]
        ports += [Port("up")] * tree.up_ports(level)
        for k, (size, lanes) in enumerate(zip(self.s, self.q, strict=True)):
            for target in range(size):
                if target != coords[k]:
                    ports += [Port("side", dim=k, group=target)] * lanes[level - 1]
        return ports


def side_port_base(params: HyperzParams, level: int, dim: int, own: int, target: int) -> int:
    """The first of the ``q_ik`` side ports of a level-``level`` switch with coordinate ``own``
    in dimension ``dim`` (0-based) toward coordinate ``target``."""
    port = params.tree.down_ports(level) + params.tree.up_ports(level)
    for k in range(dim):
        port += params.q[k][level - 1] * (params.s[k] - 1)
    return port + (target - (target > own)) * params.q[dim][level - 1]


# ---- symmetries ------------------------------------------------------------------------------


def coordinate_permutation(plan, dim: int, values: Sequence[int]) -> Symmetry:
    """Coordinate value c of dimension ``dim`` (0-based) to ``values[c]`` in every Z-node, each
    switch's side ports toward c to those toward ``values[c]``: dimensions are complete graphs,
    so any permutation of a dimension's values is an automorphism."""

    def move(c: Sequence[int]) -> tuple[int, ...]:
        return (*c[:dim], values[c[dim]], *c[dim + 1 :])

    def relabel(switch, port: Port) -> Port:
        if port.role == "side" and port.dim == dim:
            return Port("side", dim=dim, group=values[port.group])
        return port

    s = tuple(plan.topology_params["s"])
    zone_size = math.prod(plan.topology_params["z"])
    where = {
        (tuple(sw.position["coords"]), sw.position["level"], sw.position["flat"]): sw.id
        for sw in plan.switches
    }
    switch = tuple(
        where[(move(sw.position["coords"]), sw.position["level"], sw.position["flat"])]
        for sw in plan.switches
    )
    everywhere = coordinates(s)
    endpoint = tuple(
        linear_index(move(everywhere[e.id // zone_size]), s) * zone_size + e.id % zone_size
        for e in plan.endpoints
    )
    name = f"coordinates d{dim + 1} {tuple(values)}"
    return Symmetry(name, switch, relabelled_ports(plan, switch, relabel), endpoint)


def processor_permutation(plan, values: Sequence[int]) -> Symmetry:
    """Processor c of every level-1 switch (its local port group) to processor ``values[c]``
    of the same switch: the switches stay."""
    z1 = plan.topology_params["z"][0]

    def relabel(switch, port: Port) -> Port:
        return Port("local", group=values[port.group]) if port.role == "local" else port

    switch = tuple(range(len(plan.switches)))
    endpoint = tuple(e.id - e.id % z1 + values[e.id % z1] for e in plan.endpoints)
    name = f"processors {tuple(values)}"
    return Symmetry(name, switch, relabelled_ports(plan, switch, relabel), endpoint)


# ---- spec parsing ------------------------------------------------------------------------------


def _lanes(h: int):
    """``q`` entry check: an integer >= 1 (every level) or a list of h integers >= 1."""
    each = integer(1)

    def check(value, path: str) -> tuple[int, ...]:
        if isinstance(value, list):
            return int_list(1, length=h)(value, path)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(
                path,
                f"must be an integer >= 1 or a list of {h} integers >= 1 (q_ik per level),"
                f" got {describe(value)}",
            )
        return (each(value, path),) * h

    return check


def _q_list(d: int, h: int):
    def check(value, path: str) -> tuple[tuple[int, ...], ...]:
        if not isinstance(value, list) or len(value) != d:
            raise SpecError(
                path, f"must be a list of {d} entries (one per dimension), got {describe(value)}"
            )
        return checked_entries(value, path, _lanes(h))

    return check


def _finish(reader: Reader, s: tuple[int, ...], tree_keys: dict) -> HyperzParams:
    """The keys both kinds share (q, l_max, vcs), the Z-node's checks and the port budget."""
    tree = ZnodeParams(**tree_keys, theta=MAX_INTEGER)  # the budget is l_max's, checked below
    d, h = len(s), tree.n
    params = HyperzParams(
        s=s,
        q=reader.get("q", _q_list(d, h), ((1,) * h,) * d),
        tree=tree,
        l_max=reader.get("l_max", integer(1), 64),
        vcs=reader.get("vcs", integer(1, MAX_VCS), 1),
    )
    validate(tree, reader, parallel=True)
    for level in range(1, h + 1):
        ports = params.radix(level)
        if ports > params.l_max:
            raise SpecError(
                reader.key("l_max"),
                f"level-{level} switches would have {ports} ports ({tree.down_ports(level)} down"
                f" + {tree.up_ports(level)} up + {params.side_ports(level)} side), over"
                f" l_max = {params.l_max} (the budget 2z + dq(z-1) <= L_max)",
            )
    return params


def _parse_hyperz(reader: Reader) -> HyperzParams:
    s = reader.get("s", int_list(2))
    z = reader.get("z", int_list(1))
    n = len(z)
    tree_keys = dict(
        z=z,
        R=reader.get("R", int_list(1, length=n), (1,) * n),
        psi=reader.get("psi", int_list(1, length=n), (1,) * n),
        pattern=reader.get("pattern", choice(PATTERNS), "butterfly"),
    )
    return _finish(reader, s, tree_keys)


def _parse_hyperx(reader: Reader) -> HyperzParams:
    """HyperX (h = 1): one switch per Z-node with ``terminals`` processors."""
    s = reader.get("s", int_list(2))
    terminals = reader.get("terminals", integer(1))
    return _finish(reader, s, dict(z=(terminals,), R=(1,), psi=(1,)))


def size(params: HyperzParams) -> tuple[int, int]:
    return params.switches, params.processors


# ---- wiring ------------------------------------------------------------------------------------

_ROUTINGS = ("aliod", "cliod", "odim", "deter")


@topology("hyperz", parse=_parse_hyperz, size=size, routings=_ROUTINGS)
def build(spec: FabricSpec):
    params: HyperzParams = spec.params
    tree, s = params.tree, params.s
    vcs = params.vcs + spec.routing_params.get("adaptive_vcs", 0)
    builder = PlanBuilder()
    sw: dict[tuple[tuple[int, ...], int, int], int] = {}  # (coords, level, X_i) -> switch id
    everywhere = coordinates(s)
    for coords in everywhere:
        label = ".".join(map(str, reversed(coords)))
        for level in range(1, params.h + 1):
            ports = params.ports(level, coords)
            per_zone = tree.R[level - 1]
            for flat in range(params.per_znode(level)):
                zone, index = divmod(flat, per_zone)
                position = {
                    "coords": list(coords),
                    "level": level,
                    "zone": zone,
                    "index": index,
                    "flat": flat,
                }
                sw[(coords, level, flat)] = builder.add_switch(
                    f"h{label}s{level}_{flat}", position, ports
                )
    for coords in everywhere:
        wire_tree(
            builder,
            tree,
            lambda level, w, r, c=coords: sw[(c, level, w * tree.R[level - 1] + r)],
            linear_index(coords, s) * tree.zone_size,
            "h" + ".".join(map(str, reversed(coords))),
            vcs,
        )
    for coords, k in itertools.product(everywhere, range(params.d)):
        for target in range(coords[k] + 1, s[k]):
            other = coords[:k] + (target,) + coords[k + 1 :]
            for level in range(1, params.h + 1):
                lanes = params.q[k][level - 1]
                mine = side_port_base(params, level, k, coords[k], target)
                theirs = side_port_base(params, level, k, target, coords[k])
                for flat in range(params.per_znode(level)):
                    for lane in range(lanes):
                        builder.connect(
                            sw[(coords, level, flat)],
                            mine + lane,
                            sw[(other, level, flat)],
                            theirs + lane,
                            vcs,
                        )
    topology_params = {
        "s": list(s),
        "q": [list(lanes) for lanes in params.q],
        "z": list(tree.z),
        "R": list(tree.R),
        "psi": list(tree.psi),
        "pattern": tree.pattern,
        "l_max": params.l_max,
        "vcs": params.vcs,
    }
    routing_params = {"s": list(s), "z": list(tree.z), "R": list(tree.R), "vcs": params.vcs}
    return finish_plan(builder, spec, topology_params, routing_params)


topology("hyperx", parse=_parse_hyperx, size=size, routings=_ROUTINGS, builds="hyperz")(build)
