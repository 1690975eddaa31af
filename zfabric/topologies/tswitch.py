"""T-switch fat trees: every switch of a k-ary n-tree made of two internal switches, α and β.

J. A. Villar et al., "Formalization and configuration methodology for high-radix combined
switches", The Journal of Supercomputing, 2013 (the first paper of F. J. Andújar's nDT
thesis). A T-switch
(Def 2) offers the 2k ports of a fat-tree switch, down ports 0..k-1 and up ports k..2k-1
(Defs 3-5), from two identical internal switches joined by r internal links. Which T-switch
ports sit on α is the switch-level connection pattern (SCP), one per level here: the paper's
C^α, k of the 2k ports (Prop 2), β taking the rest (Def 10). The top level's up ports exist in
the paper's T-switch but face nothing; the fabric leaves them out, and an internal switch left
with no port in use at all (Type B puts every down port on α) is not built, nor its internal
links: nothing could reach it.

- ``optimal``: Type A below the top (down port l on the internal switch of up port l + k,
  α = {0..k/2-1} ∪ {k..k+k/2-1}, Prop 20; k even), Type B at the top (every down port on α,
  Prop 21);
- ``bad``: the most crossings per switch: below the top every down port on α and every up port
  on β, so every forward and backward connection crosses (the paper's Fig. 1b flow f2); at the
  top the down ports split in halves, so most turnaround connections cross (TC_I is largest at
  p = k/2). The paper's own arbitrary SCP (its Fig. 7c) is lost from the text.

Each internal switch numbers its ports as the T-switch does, those on it in ascending order
(down ports ``Port("down" | "local", group=l)``, up ports ``Port("up", group=l - k)``), then
its r internal ports: the routing reads every port's T-switch number from its role and group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..fields import Reader, choice, describe, integer
from ..plan import PlanBuilder, Port

__all__ = [
    "SCP_NAMES",
    "TSwitchParams",
    "TSwitchWiring",
    "INTERNAL_CLASSES",
    "optimal_alpha",
    "bad_alpha",
    "parse_tswitch",
    "half_ports",
    "tswitch_port",
    "backward_pairs_kept",
    "default_internal_vcs",
    "build_tswitches",
    "internal_switch_radix",
]

SCP_NAMES = ("optimal", "bad")
#: internal-link traffic classes: toward an up port (forward connections), toward a down port
#: (turnaround and backward connections)
INTERNAL_CLASSES = ("up", "down")
#: internal links per T-switch a spec may ask for (the switch's radix is bounded by theta too)
MAX_INTERNAL_PORTS = 64


@dataclass(frozen=True)
class TSwitchParams:
    """T-switches: ``internal_ports`` links between α and β; ``alpha[i]`` the T-switch ports
    on α at level i + 1 (sorted), and ``scp`` the name that chose them (``custom`` for lists)."""

    internal_ports: int
    scp: str
    alpha: tuple[tuple[int, ...], ...]

    def __str__(self) -> str:
        return f"{self.internal_ports} internal port(s), SCP {self.scp}"


def optimal_alpha(k: int, n: int) -> tuple[tuple[int, ...], ...]:
    """Type A at levels 1..n-1 (pairs l, l + k; the paper's 8x8 example {0,1,2,3,8,9,10,11}),
    Type B at level n (every down port on α)."""
    type_a = tuple(range(k // 2)) + tuple(range(k, k + k // 2))
    return (type_a,) * (n - 1) + (tuple(range(k)),)


def bad_alpha(k: int, n: int) -> tuple[tuple[int, ...], ...]:
    """Every down port on α below the top; the down ports split in halves at the top."""
    half = k // 2
    top = tuple(range(half)) + tuple(range(k, 2 * k - half))
    return (tuple(range(k)),) * (n - 1) + (top,)


def _alpha_list(value: Any, path: str, k: int) -> tuple[int, ...]:
    """One level's α ports: k distinct T-switch ports in 0..2k-1."""
    if not isinstance(value, list):
        raise SpecError(
            path, f"must be a list of the {k} T-switch ports on alpha, got {describe(value)}"
        )
    if len(value) != k:
        raise SpecError(
            path,
            f"must list {k} ports (alpha holds k of the T-switch's 2k), got {len(value)}:"
            f" {describe(value)}",
        )
    port = integer(0, 2 * k - 1)
    seen: dict[int, int] = {}
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        port(item, where)
        if item in seen:
            raise SpecError(where, f"duplicate port {item} (already {path}[{seen[item]}])")
        seen[item] = i
    return tuple(sorted(seen))


def _scp(value: Any, path: str, k: int, n: int) -> tuple[str, tuple[tuple[int, ...], ...]]:
    want = f"optimal, bad or a list of {n} lists (the ports on alpha at each level)"
    if isinstance(value, str):
        name = choice(list(SCP_NAMES))(value, path)
        if name == "optimal" and k % 2:
            raise SpecError(
                path,
                f"'optimal' needs an even k (Type A puts k/2 pairs of down port l and up port"
                f" l + k on each internal switch), got k = {k}; give the lists instead",
            )
        return name, optimal_alpha(k, n) if name == "optimal" else bad_alpha(k, n)
    if not isinstance(value, list):
        raise SpecError(path, f"must be {want}, got {describe(value)}")
    if len(value) != n:
        raise SpecError(path, f"must be {want}, got {len(value)} lists: {describe(value)}")
    errors, levels = [], []
    for i, item in enumerate(value):
        try:
            levels.append(_alpha_list(item, f"{path}[{i}]", k))
        except SpecError as error:
            errors.append(error)
    if errors:
        raise SpecError.combine(errors)
    return "custom", tuple(levels)


def parse_tswitch(reader: Reader, k: int, n: int) -> TSwitchParams:
    """The ``tswitch`` mapping of a k-ary n-tree (``reader`` is the topology's)."""
    sub = reader.section("tswitch")
    internal_ports = sub.get("internal_ports", integer(1, MAX_INTERNAL_PORTS), 1)
    if not sub.has("scp") and k % 2:
        raise SpecError(
            sub.key("scp"),
            f"missing: the default 'optimal' needs an even k, got k = {k}; give 'bad' or the lists",
        )
    scp, alpha = sub.get("scp", lambda value, path: _scp(value, path, k, n), None) or (
        "optimal",
        optimal_alpha(k, n),
    )
    sub.finish()
    return TSwitchParams(internal_ports=internal_ports, scp=scp, alpha=alpha)


def half_ports(params: TSwitchParams, level: int, ports: int) -> tuple[tuple[int, ...], ...]:
    """The T-switch ports in use (``0..ports-1``) on α and on β at ``level``, ascending."""
    on_alpha = set(params.alpha[level - 1])
    alpha = tuple(p for p in range(ports) if p in on_alpha)
    beta = tuple(p for p in range(ports) if p not in on_alpha)
    return alpha, beta


def tswitch_port(port: Port, k: int) -> int:
    """The T-switch port number of an internal switch's down, local or up port."""
    return port.group if port.role in ("down", "local") else k + port.group


def backward_pairs_kept(params: TSwitchParams, k: int) -> bool:
    """Every down port l sits with up port l + k below the top: no descending packet crosses
    an internal link (DESTRO descends from up port l + k to down port l, the paper's Prop 9)."""
    return all(
        (down in alpha) == (down + k in alpha)
        for alpha in map(set, params.alpha[:-1])
        for down in range(k)
    )


def default_internal_vcs(params: TSwitchParams, k: int, vcs: int) -> dict[str, list[int]]:
    """The internal links' VCs per class, ``vcs`` per class (the tree's VCs per link).

    Up*/down* order proves two classes deadlock-free: a packet on the ``down`` class never
    requests an up port again. One shared class suffices when no descending packet crosses
    (:func:`backward_pairs_kept`): then only forward and turnaround packets use the internal
    links, and what they request next is an up link or a down link below, never an internal
    link of the switch they left. The proof (``zfabric check``) checks either way.
    """
    up = list(range(vcs))
    return {"up": up, "down": up if backward_pairs_kept(params, k) else list(range(vcs, 2 * vcs))}


class TSwitchWiring:
    """Wires a tree as if its switches were whole (``attach`` and ``connect`` on T-switch
    ports), onto the internal switches that hold those ports.

    ``place[switch][port]`` is the (internal switch id, port) of T-switch ``switch``'s port.
    """

    def __init__(self, builder: PlanBuilder, place: dict[Any, list[tuple[int, int]]]):
        self._builder = builder
        self._place = place

    def attach(self, endpoint: int, switch: Any, port: int, name: str | None = None) -> None:
        self._builder.attach(endpoint, *self._place[switch][port], name)

    def connect(self, a: Any, a_port: int, b: Any, b_port: int, vcs: int) -> None:
        self._builder.connect(*self._place[a][a_port], *self._place[b][b_port], vcs)


def build_tswitches(
    builder: PlanBuilder,
    params: TSwitchParams,
    level: int,
    name: str,
    position: dict[str, Any],
    ports: list[Port],
    internal_vcs: int,
) -> list[tuple[int, int]]:
    """Add the internal switches of one T-switch whose ports would be ``ports``, and the
    internal links between them; returns the (switch id, port) of every T-switch port."""
    halves = [(half, on) for half, on in enumerate(half_ports(params, level, len(ports))) if on]
    place: list[tuple[int, int]] = [(-1, -1)] * len(ports)
    internal = params.internal_ports if len(halves) == 2 else 0
    ids = []
    for half, on_half in halves:
        switch = builder.add_switch(
            f"{name}{'ab'[half]}",
            {**position, "half": half},
            [ports[p] for p in on_half] + [Port("internal")] * internal,
        )
        ids.append(switch)
        for index, p in enumerate(on_half):
            place[p] = (switch, index)
    for link in range(internal):
        (_, on_a), (_, on_b) = halves
        builder.connect(ids[0], len(on_a) + link, ids[1], len(on_b) + link, internal_vcs)
    return place


def internal_switch_radix(params: TSwitchParams, level: int, ports: int) -> int:
    """The larger internal switch's port count at ``level`` (internal ports included)."""
    halves = [h for h in half_ports(params, level, ports) if h]
    return max(map(len, halves)) + (params.internal_ports if len(halves) == 2 else 0)
