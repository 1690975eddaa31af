"""Zoned node (Znode) fat trees, layers and super nodes (Snode); k-ary n-tree and XGFT presets.

After A. Peratikou, *An optimised and generalised node for fat tree classes* (PhD thesis,
University of Portsmouth, 2014). Names follow it: ``n`` levels,
``z_i`` zones under a level-i zone (``z_1`` processors per level-1 zone), ``R_i`` routing
switches per zone, ``psi_i`` the connectivity degree of the bundle between levels i-1 and i,
``l`` layers, ``m`` Znodes joined by ``h_i`` side links per level, ``theta`` links per switch.
Lists in the spec are 0-based (``z[0]`` is z_1); levels in positions and messages are 1-based.

Wiring (digest §1.11): levels i and i+1 are joined *forward* when R_i divides R_{i+1}
(G = R_{i+1}/R_i, psi_{i+1} <= R_i), *backward* when R_{i+1} divides R_i (G = R_i/R_{i+1},
psi_{i+1} <= R_{i+1}) and *fully* otherwise (psi_{i+1} must be 1), with the butterfly or omega
index maps of §1.5. Every processor attaches to all R_1 level-1 switches of its zone in every
layer; layers meet only at the processors. Side links join the switch at the same (layer, level,
zone, index) in every other Znode.

Port numbering on every switch (§1.11 rule): first the down ports, z_i contiguous groups indexed
by the child label c (``Port("down", group=c)``; at level 1 one ``Port("local", group=c)`` per
processor of the zone), then the up ports (``Port("up")``, one adaptive pool), then the side ports,
``h_i`` per other Znode in increasing Znode id (``Port("side", group=target znode)``).

Endpoint id = k * P_z + X for processor X (logical address, eq. 6.1) of Znode k; P_z = prod(z).

Presets: ``kary_ntree`` (k, n) is z = (k,)*n, R = (1, k, ..., k^(n-1)), forward butterfly
(digest §1.8, with the thesis's n+1-entry R vector read as the typo it is). ``xgft`` (h, m, w)
is z_i = m_i, R_i = w_1 * ... * w_i, omega pattern. w_1 may exceed 1: a leaf of XGFT has w_1
parents, which is exactly the Znode's multi-homing of each processor to its R_1 level-1 switches
(digest §1.4, last level-1 bullet), so no w_1 = 1 restriction is needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..fields import MAX_LIST_LENGTH, Reader, choice, describe, int_list, integer
from ..plan import PlanBuilder, Port, Switch
from ..routing.base import MAX_VCS
from ..routing.dort import internal_link_vcs
from ..spec import FabricSpec
from .base import finish_plan, topology
from .tswitch import (
    TSwitchParams,
    TSwitchWiring,
    build_tswitches,
    default_internal_vcs,
    half_ports,
    internal_switch_radix,
    parse_tswitch,
)
from .znode_notation import NotationError, ZnodeNotation, format_notation, parse_notation

__all__ = [
    "port_groups",
    "ZnodeParams",
    "labels",
    "znode_label",
    "physical_address",
    "common_level",
    "field_width",
    "connectivity",
    "validate",
    "wire_tree",
]

PATTERNS = ["butterfly", "omega"]


def field_width(values: int) -> int:
    """Bits of a field holding ``values`` distinct values: ceil(log2 values), 0 for 1 value."""
    return (values - 1).bit_length()


def labels(x: int, z: Sequence[int]) -> tuple[int, ...]:
    """Port labels (p_1, ..., p_n) of logical address ``x`` (eq. 6.1), p_1 first.

    p_i = floor(x / (z_1 ... z_{i-1})) mod z_i. The thesis writes them the other way round,
    (p_n, ..., p_1), so its (1;1,0,2) for 26 in z = (3,2,3) is znode 1 and labels (2, 0, 1) here.
    """
    out = []
    for zi in z:
        out.append(x % zi)
        x //= zi
    return tuple(out)


def znode_label(x: int, z: Sequence[int], znodes: int) -> int:
    """The Znode label p_{n+1} of logical address ``x`` (eq. 6.2)."""
    return (x // math.prod(z)) % znodes


def physical_address(x: int, z: Sequence[int], znodes: int = 1) -> int:
    """Bit-field address of logical address ``x`` (eq. 6.3): label p_j in ceil(log2 z_j) bits,
    p_1 lowest, the Znode id on top. Equals ``x`` when every z_j is a power of two."""
    address, shift = 0, 0
    for label, zi in zip(labels(x, z), z, strict=True):
        address |= label << shift
        shift += field_width(zi)
    return address | znode_label(x, z, znodes) << shift


def common_level(p: Sequence[int], q: Sequence[int]) -> int:
    """c(P, Q) = min{i in 1..n : p_j = q_j for all j in (i, n]} (digest §2.2), labels p_1 first.

    The common level within a Znode, the peer level across Znodes (Znode ids are ignored).
    """
    c = len(p)
    while c > 1 and p[c - 1] == q[c - 1]:
        c -= 1
    return c


def connectivity(upper: int, lower: int) -> tuple[str, int]:
    """Connectivity between a level with ``lower`` switches per zone and the level above with
    ``upper``: ("forward", R_{i+1}/R_i), ("backward", R_i/R_{i+1}) or ("full", 0) (§1.5)."""
    if upper % lower == 0:
        return "forward", upper // lower
    if lower % upper == 0:
        return "backward", lower // upper
    return "full", 0


@dataclass(frozen=True)
class ZnodeParams:
    """A (layered, super-) Znode: tuples are indexed by level - 1."""

    z: tuple[int, ...]
    R: tuple[int, ...]
    psi: tuple[int, ...]
    pattern: str = "butterfly"
    layers: int = 1
    znodes: int = 1
    side: tuple[int, ...] = ()
    theta: int = 64
    vcs: int = 1
    #: T-switches (kary_ntree and xgft k-ary n-trees only): every switch two internal switches
    tswitch: TSwitchParams | None = None

    def __post_init__(self) -> None:
        if not self.side:  # no side channels given: h_i = 1 at every level (digest §7.6)
            object.__setattr__(self, "side", (1,) * len(self.z))

    @property
    def n(self) -> int:
        return len(self.z)

    @property
    def zone_size(self) -> int:
        """P_z: processors per Znode."""
        return math.prod(self.z)

    @property
    def processors(self) -> int:
        return self.znodes * self.zone_size

    def zones(self, level: int) -> int:
        """N_i: zones at level i per Znode and layer."""
        return math.prod(self.z[level:])

    def under(self, level: int) -> int:
        """Processors under one level-i zone: z_1 ... z_i."""
        return math.prod(self.z[:level])

    def link(self, level: int) -> tuple[str, int]:
        """Connectivity between ``level`` and ``level + 1``."""
        return connectivity(self.R[level], self.R[level - 1])

    def group_size(self, level: int) -> int:
        """Down ports per child zone on a level-i switch (1 at level 1: one per processor)."""
        if level == 1:
            return 1
        kind, ratio = self.link(level - 1)
        psi = self.psi[level - 1]
        return {"forward": psi, "backward": ratio * psi, "full": self.R[level - 2]}[kind]

    def down_ports(self, level: int) -> int:
        return self.z[level - 1] * self.group_size(level)

    def up_ports(self, level: int) -> int:
        if level == self.n:
            return 0
        kind, ratio = self.link(level)
        psi = self.psi[level]
        return {"forward": ratio * psi, "backward": psi, "full": self.R[level]}[kind]

    def side_ports(self, level: int) -> int:
        return self.side[level - 1] * (self.znodes - 1)

    def radix(self, level: int) -> int:
        return self.down_ports(level) + self.up_ports(level) + self.side_ports(level)

    def switches(self) -> int:
        per_layer = sum(
            self.R[i - 1] * self.zones(i) * self.internal_switches(i) for i in range(1, self.n + 1)
        )
        return self.znodes * self.layers * per_layer

    def internal_switches(self, level: int) -> int:
        """Switches per tree switch at ``level``: 1, or the T-switch's internal switches that
        hold a port in use (Type B leaves β of a top switch without any)."""
        if self.tswitch is None:
            return 1
        return sum(1 for half in half_ports(self.tswitch, level, self.radix(level)) if half)

    def notation(self) -> str:
        """The thesis's Z/S notation (``4∘Z3(2,4,8)/(1,2,2)/(4,2,4)``, :mod:`.znode_notation`),
        then what it leaves out: side channels of a super node, theta, VCs, T-switches."""
        shape = ZnodeNotation(self.R, self.psi, self.z, self.layers, self.znodes, self.pattern)
        text = format_notation(shape)
        if self.znodes > 1:
            text += f", side={'x'.join(map(str, self.side))}"
        text += f", theta={self.theta}, vcs={self.vcs}"
        if self.tswitch is not None:
            text += f", tswitch={self.tswitch}"
        return text

    def turn_level(self, p: Sequence[int], q: Sequence[int], same_znode: bool) -> int:
        """The level where a packet turns: the common level, or across Znodes the lowest level
        >= the peer level with side links (digest §7.6)."""
        c = common_level(p, q)
        if not same_znode:
            while self.side[c - 1] == 0:
                c += 1
        return c


# ---- spec parsing ------------------------------------------------------------------------------


#: the keys the Z/S notation gives
NOTATION_KEYS = ("z", "R", "psi", "pattern", "layers", "znodes")


def _notation(value: object, path: str) -> ZnodeNotation:
    if not isinstance(value, str):
        raise SpecError(path, f"must be a string like 'Z3(1,8,64)/(8,8,16)', got {describe(value)}")
    try:
        return parse_notation(value)
    except NotationError as error:
        raise SpecError(path, f"{error} in {value!r}") from None


def _parse_znode(reader: Reader) -> ZnodeParams:
    if reader.has("notation"):
        for key in NOTATION_KEYS:
            if reader.has(key):
                raise SpecError(reader.key(key), "not with notation, which gives it")
        shape = reader.get("notation", _notation)
    else:
        z = reader.get("z", int_list(1))
        n = len(z)
        shape = ZnodeNotation(
            z=z,
            R=reader.get("R", int_list(1, length=n)),
            psi=reader.get("psi", int_list(1, length=n), (1,) * n),
            pattern=reader.get("pattern", choice(PATTERNS), "butterfly"),
            layers=reader.get("layers", integer(1), 1),
            znodes=reader.get("znodes", integer(1), 1),
        )
    n = len(shape.z)
    params = ZnodeParams(
        z=shape.z,
        R=shape.R,
        psi=shape.psi,
        pattern=shape.pattern,
        layers=shape.layers,
        znodes=shape.znodes,
        side=reader.get("side", int_list(0, length=n), (1,) * n),
        theta=reader.get("theta", integer(1), 64),
        vcs=reader.get("vcs", integer(1, MAX_VCS), 1),
    )
    if reader.has("processors"):
        processors = reader.get("processors", integer(1))
        if processors != params.processors:
            raise SpecError(
                reader.key("processors"),
                f"must equal znodes x prod(z) = {params.znodes} x {params.zone_size} = "
                f"{params.processors}, got {processors}",
            )
    try:
        validate(params, reader)
    except SpecError as error:
        key = error.path.removeprefix(f"{reader.path}.")
        if not reader.has("notation") or key.split("[")[0] not in NOTATION_KEYS:
            raise
        raise SpecError(reader.key("notation"), f"{key} {error.message}") from None
    return params


def validate(params: ZnodeParams, reader: Reader, *, parallel: bool = False) -> None:
    """Range checks shared by the znode kind, its presets and HyperZ's Z-node (paths name the
    znode keys). ``parallel``: psi may exceed the forward (backward) bound R_i (R_{i+1}), the
    cyclic index map of :func:`_bundle` then wrapping into parallel links, as HyperZ's g_i
    counts them (digest hyperz-transit.md §1: the §5.3 Z-node has g_2 = 2 with r_1 = 1)."""
    n, R, psi = params.n, params.R, params.psi
    if psi[0] != 1:
        raise SpecError(
            reader.key("psi[0]"),
            f"must be 1 (processors attach to every level-1 switch of their zone), got {psi[0]}",
        )
    for level in range(1, n):
        kind, _ = params.link(level)
        value = psi[level]
        where = f"between levels {level} and {level + 1}"
        if parallel and kind != "full":
            continue
        if kind == "forward" and value > R[level - 1]:
            why = f"<= R[{level - 1}] = {R[level - 1]} for forward connectivity {where}"
        elif kind == "backward" and value > R[level]:
            why = f"<= R[{level}] = {R[level]} for backward connectivity {where}"
        elif kind == "full" and value != 1:
            why = f"1: levels {level} and {level + 1} are fully connected (R ratio not an integer)"
        else:
            continue
        raise SpecError(reader.key(f"psi[{level}]"), f"must be {why}, got {value}")
    if params.znodes > 1 and params.side[n - 1] == 0:
        raise SpecError(
            reader.key(f"side[{n - 1}]"),
            "must be >= 1 when znodes > 1 (got 0): processors whose top-level labels differ "
            "in different Znodes would be unreachable from each other",
        )
    for level in range(1, n + 1):
        links = params.radix(level)
        what = (
            f"{params.down_ports(level)} down + {params.up_ports(level)} up + "
            f"{params.side_ports(level)} side"
        )
        if params.tswitch is not None:
            links = internal_switch_radix(params.tswitch, level, links)
            what = f"internal switches; {params.tswitch.internal_ports} internal ports included"
        if links > params.theta:
            raise SpecError(
                reader.key("theta"),
                f"level-{level} switches would have {links} links ({what}), "
                f"over theta = {params.theta}",
            )


def _parse_kary_ntree(reader: Reader) -> ZnodeParams:
    k = reader.get("k", integer(2))
    n = reader.get("n", integer(1, MAX_LIST_LENGTH))  # levels: as many as a z list may have
    params = ZnodeParams(
        z=(k,) * n,
        R=tuple(k**i for i in range(n)),
        psi=(1,) * n,
        theta=reader.get("theta", integer(1), 64),
        vcs=reader.get("vcs", integer(1, MAX_VCS), 1),
        tswitch=parse_tswitch(reader, k, n) if reader.has("tswitch") else None,
    )
    validate(params, reader)
    return params


def _parse_xgft(reader: Reader) -> ZnodeParams:
    h = reader.get("h", integer(1))
    m = reader.get("m", int_list(1, length=h))
    w = reader.get("w", int_list(1, length=h))
    tswitch = None
    if reader.has("tswitch"):
        k = m[0]
        if m != (k,) * h or w != (1,) + (k,) * (h - 1):
            raise SpecError(
                reader.key("tswitch"),
                "T-switches need an XGFT that is a k-ary n-tree (m all equal to k, w = [1, k,"
                f" ..., k]: 2k-port switches, k down and k up), got m = {list(m)}, w = {list(w)}",
            )
        tswitch = parse_tswitch(reader, k, h)
    params = ZnodeParams(
        z=m,
        R=tuple(math.prod(w[: i + 1]) for i in range(h)),
        psi=(1,) * h,
        pattern="omega",
        theta=reader.get("theta", integer(1), 64),
        vcs=reader.get("vcs", integer(1, MAX_VCS), 1),
        tswitch=tswitch,
    )
    validate(params, reader)
    return params


def size(params: ZnodeParams) -> tuple[int, int]:
    return params.switches(), params.processors


# ---- wiring ------------------------------------------------------------------------------------


def _ports(params: ZnodeParams, level: int, znode: int) -> list[Port]:
    role = "local" if level == 1 else "down"
    ports = [
        Port(role, group=c)
        for c in range(params.z[level - 1])
        for _ in range(params.group_size(level))
    ]
    ports += [Port("up")] * params.up_ports(level)
    for other in range(params.znodes):
        if other != znode:
            ports += [Port("side", group=other)] * params.side[level - 1]
    return ports


def _bundle(params: ZnodeParams, level: int, c: int) -> list[tuple[int, int, int, int]]:
    """Links between child zone ``c`` at ``level`` and its parent zone (digest §1.11).

    Returns (child switch r, its up-port index u_port, parent switch u, parent down port).
    """
    kind, ratio = params.link(level)
    lower, upper, degree = params.R[level - 1], params.R[level], params.psi[level]
    omega = params.pattern == "omega"
    links = []
    if kind == "forward":
        for r in range(lower):
            for g in range(ratio):
                for t in range(degree):
                    s = (r + t) % lower
                    u = s * ratio + g if omega else g * lower + s
                    links.append((r, g * degree + t, u, c * degree + t))
    elif kind == "backward":
        for r in range(lower):
            g, s = (r % ratio, r // ratio) if omega else divmod(r, upper)
            for t in range(degree):
                links.append((r, t, (s + t) % upper, (c * ratio + g) * degree + t))
    else:
        for r in range(lower):
            for u in range(upper):
                links.append((r, u, u, c * lower + r))
    return links


def wire_tree(
    builder: PlanBuilder | TSwitchWiring,
    params: ZnodeParams,
    switch: Callable[[int, int, int], int],
    first_endpoint: int,
    prefix: str,
    vcs: int,
) -> None:
    """Wire one layer of one Znode (digest §1.11): its processors, each to all R_1 level-1
    switches of its zone (attachment ``lam * R_1 + r`` in layer ``lam``), and the bundles between
    levels. ``switch(level, zone, index)`` is the switch id; processor X becomes endpoint
    ``first_endpoint + X``, named ``{prefix}p{X}``. Up ports follow the down ports on every
    switch (the port numbering of this module); HyperZ reuses the tree as it is, and T-switch
    trees through a :class:`TSwitchWiring` (switches and ports of whole tree switches)."""
    z = params.z
    for x in range(params.zone_size):
        w, c = divmod(x, z[0])
        for r in range(params.R[0]):
            builder.attach(first_endpoint + x, switch(1, w, r), c, f"{prefix}p{x}")
    for level in range(1, params.n):
        base = params.down_ports(level)
        for parent in range(params.zones(level + 1)):
            for c in range(z[level]):
                child = parent * z[level] + c
                for r, up, u, down in _bundle(params, level, c):
                    builder.connect(
                        switch(level, child, r), base + up, switch(level + 1, parent, u), down, vcs
                    )


_ROUTINGS = ("sliced", "updown", "flat", "source_destination")


def _tree_routings(params: ZnodeParams) -> tuple[str, ...]:
    """A T-switch tree is routed by DESTRO alone (the others know no internal link)."""
    return ("destro",) if params.tswitch is not None else _ROUTINGS


@topology("znode", parse=_parse_znode, size=size, routings=_ROUTINGS)
def build(spec: FabricSpec):
    params: ZnodeParams = spec.params
    if params.tswitch is not None:
        return _build_tswitch_tree(spec)
    n, z, R, h = params.n, params.z, params.R, params.side
    m, layers, vcs = params.znodes, params.layers, params.vcs
    builder = PlanBuilder()
    sw: dict[tuple[int, int, int, int, int], int] = {}
    for k in range(m):
        for lam in range(layers):
            for level in range(1, n + 1):
                ports = _ports(params, level, k)
                for w in range(params.zones(level)):
                    for r in range(R[level - 1]):
                        position = {"znode": k, "layer": lam, "level": level, "zone": w, "index": r}
                        name = f"z{k}l{lam}s{level}_{w}_{r}"
                        sw[(k, lam, level, w, r)] = builder.add_switch(name, position, ports)

    def side_port(level: int, k: int, target: int, t: int) -> int:
        rank = target - (target > k)
        return params.down_ports(level) + params.up_ports(level) + rank * h[level - 1] + t

    for k in range(m):
        for lam in range(layers):
            wire_tree(
                builder,
                params,
                lambda level, w, r, k=k, lam=lam: sw[(k, lam, level, w, r)],
                k * params.zone_size,
                f"z{k}",
                vcs,
            )
    for k in range(m):
        for k2 in range(k + 1, m):
            for lam in range(layers):
                for level in range(1, n + 1):
                    for w in range(params.zones(level)):
                        for r in range(R[level - 1]):
                            for t in range(h[level - 1]):
                                builder.connect(
                                    sw[(k, lam, level, w, r)],
                                    side_port(level, k, k2, t),
                                    sw[(k2, lam, level, w, r)],
                                    side_port(level, k2, k, t),
                                    vcs,
                                )
    routing_params = {"z": list(z), "znodes": m, "side": list(h)}
    return finish_plan(builder, spec, _topology_params(params), routing_params)


def _topology_params(params: ZnodeParams) -> dict:
    topology_params = {
        "z": list(params.z),
        "R": list(params.R),
        "psi": list(params.psi),
        "pattern": params.pattern,
        "layers": params.layers,
        "znodes": params.znodes,
        "side": list(params.side),
        "theta": params.theta,
        "vcs": params.vcs,
    }
    if params.tswitch is not None:
        topology_params["tswitch"] = {
            "internal_ports": params.tswitch.internal_ports,
            "scp": params.tswitch.scp,
            "alpha": [list(ports) for ports in params.tswitch.alpha],
        }
    return topology_params


def _build_tswitch_tree(spec: FabricSpec):
    """A k-ary n-tree of T-switches (zfabric/topologies/tswitch.py), wired as the plain tree
    is: :func:`wire_tree` on T-switch ports, placed onto the internal switches."""
    params: ZnodeParams = spec.params
    tswitch, k = params.tswitch, params.z[0]
    internal_vcs = spec.routing_params.get("internal_vcs") or default_internal_vcs(
        tswitch, k, params.vcs
    )
    builder = PlanBuilder()
    place = {}
    for level in range(1, params.n + 1):
        ports = [port for port in _ports(params, level, 0) if port.role != "up"]
        ports += [Port("up", group=j) for j in range(params.up_ports(level))]
        for w in range(params.zones(level)):
            for r in range(params.R[level - 1]):
                position = {"znode": 0, "layer": 0, "level": level, "zone": w, "index": r}
                place[(level, w, r)] = build_tswitches(
                    builder,
                    tswitch,
                    level,
                    f"z0l0s{level}_{w}_{r}",
                    position,
                    ports,
                    internal_link_vcs(internal_vcs),
                )
    wiring = TSwitchWiring(builder, place)
    wire_tree(wiring, params, lambda level, w, r: (level, w, r), 0, "z0", params.vcs)
    routing_params = {"z": list(params.z), "znodes": 1, "side": list(params.side)}
    routing_params["internal_vcs"] = internal_vcs
    return finish_plan(builder, spec, _topology_params(params), routing_params)


for _name, _parse in (("kary_ntree", _parse_kary_ntree), ("xgft", _parse_xgft)):
    topology(
        _name,
        parse=_parse,
        size=size,
        routings=(*_ROUTINGS, "destro"),
        routings_for=_tree_routings,
        builds="znode",
    )(build)


def port_groups(switch: Switch) -> tuple[list[int], dict[int, list[int]], dict[int, list[int]]]:
    """A Znode switch's ports as the routings see them: the up pool, the down groups by child
    label (level-1 local ports included) and the side groups by target Znode id."""
    up: list[int] = []
    down: dict[int, list[int]] = {}
    across: dict[int, list[int]] = {}
    for index, port in enumerate(switch.ports):
        if port.role == "up":
            up.append(index)
        elif port.role in ("down", "local"):
            down.setdefault(port.group, []).append(index)
        elif port.role == "side":
            across.setdefault(port.group, []).append(index)
    return up, down, across
