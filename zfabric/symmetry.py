"""Symmetries of a plan that its routing commutes with: the set-up walks one destination per orbit.

The routing proof and the uniform pattern's limits walk one route graph per destination, about
N^2 routing states. Where a permutation g of the switches (with a permutation of each switch's
ports, of the endpoints and of each link's VCs) is an automorphism of the plan that the routing
commutes with, the routes toward g(d) are the images under g of the routes toward d: the CDG
edges toward g(d) are g's images of those toward d, the hops from s to g(d) are those from
g^-1(s) to d, and a pattern invariant under g loads link g(l) toward g(d) as it loads l toward
d. So one destination per orbit of the group is walked and its results are mapped onto the
rest of its orbit, with numpy on channel, link and endpoint ids.

A topology family builds its automorphisms (the torus's translations and reflections, HyperZ's
permutations of coordinate values, Transit's of an address digit's values); the routing declares
which of them it commutes with (:meth:`~zfabric.routing.base.RoutingFunction.symmetries`), with
the VCs they map to. The plan part is verified here on every use (O(links) per generator, a
:class:`PlanError` when it fails); the routing part is a declaration the tests check against the
full walk, and every use walks a few destinations outside the representatives (seeded) in full
and compares them with their mapped results (:func:`spot_check_members`).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from .errors import PlanError
from .plan import FabricPlan, Port, PortRef, Switch

__all__ = [
    "Symmetry",
    "SymmetryGroup",
    "SPOT_CHECKS",
    "channel_ids",
    "distinct",
    "relabelled_ports",
    "symmetry_group",
]

#: destinations outside the representatives walked in full and compared on every use
SPOT_CHECKS = 2

Value = TypeVar("Value")


@dataclass(frozen=True)
class Symmetry:
    """One generator: switch s goes to ``switch[s]``, its port p to ``port[s][p]`` there,
    endpoint e to ``endpoint[e]``, VC v of link l to ``vcs[l][v]`` on l's image (``vcs``
    empty: every VC to itself). ``in_port``: where the input of port p goes, apart from its
    output (a fabric of one-way channels, whose input and output of one port index face
    different neighbours); empty: with its output."""

    name: str
    switch: tuple[int, ...]
    port: tuple[tuple[int, ...], ...]
    endpoint: tuple[int, ...]
    vcs: tuple[tuple[int, ...], ...] = ()
    in_port: tuple[tuple[int, ...], ...] = ()

    def with_vcs(self, plan: FabricPlan, rule: Callable[[int], tuple[int, ...] | None]) -> Symmetry:
        """This symmetry with link l's VCs mapped by ``rule(l)`` (None: unchanged)."""
        vcs = tuple(rule(link.id) or tuple(range(link.vcs)) for link in plan.links)
        return Symmetry(self.name, self.switch, self.port, self.endpoint, vcs, self.in_port)


@dataclass
class _Generator:
    """A verified :class:`Symmetry` as id maps: switches, links, channels, endpoints."""

    name: str
    switch: np.ndarray
    link: np.ndarray
    channel: np.ndarray
    endpoint: np.ndarray


@dataclass
class SymmetryGroup:
    """The group the generators span, as orbits of destinations: each orbit's first member is its
    representative (its lowest endpoint id), every other member is reached from an earlier one by
    one generator (``tree``: member -> (parent, generator index))."""

    family: str
    generators: list[_Generator]
    channels: int  # channel ids: ``base[link] + vc``
    base: np.ndarray
    orbits: list[list[int]]
    tree: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def representatives(self) -> list[int]:
        return [orbit[0] for orbit in self.orbits]

    def images(
        self, orbit: Sequence[int], value: Value, apply: Callable[[_Generator, Value], Value]
    ) -> Iterator[tuple[int, Value]]:
        """(member, ``value`` mapped onto it) for each member of ``orbit`` (representative
        first), ``value`` being the representative's and ``apply(g, v)`` its image under g."""
        found = {orbit[0]: value}
        yield orbit[0], value
        for member in orbit[1:]:
            parent, generator = self.tree[member]
            found[member] = apply(self.generators[generator], found[parent])
            yield member, found[member]

    def image_of(
        self, member: int, value: Value, apply: Callable[[_Generator, Value], Value]
    ) -> Value:
        """The representative's ``value`` mapped onto ``member`` along the tree."""
        path = []
        while member in self.tree:
            member, generator = self.tree[member]
            path.append(generator)
        for generator in reversed(path):
            value = apply(self.generators[generator], value)
        return value

    def closure(self, codes: np.ndarray) -> np.ndarray:
        """The CDG edges (sorted codes) the group makes of ``codes`` (sorted, distinct): the
        edges toward every destination are the group's images of its representatives', so
        their union is the closure of the representatives' under the generators, found a
        frontier at a time (each edge mapped once by each generator)."""
        moving = [g for g in self.generators if not np.array_equal(g.channel, self._identity)]
        known = frontier = codes
        while frontier.size and moving:
            images = distinct(np.concatenate([self.map_edges(g, frontier) for g in moving]))
            where = np.searchsorted(known, images)
            fresh = where == len(known)
            fresh[~fresh] = known[where[~fresh]] != images[~fresh]
            frontier = images[fresh]
            known = np.sort(np.concatenate([known, frontier]), kind="stable")  # two sorted runs
        return known

    def link_sums(self, values: np.ndarray, members: int) -> np.ndarray:
        """Per link, the sum over ``members`` destinations of an orbit of the value their
        representative's ``values`` map to there: ``members`` times the mean of ``values``
        over the link's orbit (each link of an orbit is every one's image equally often)."""
        orbit = self.link_orbit
        sums = np.bincount(orbit, weights=values, minlength=len(orbit))
        return members * (sums[orbit] / self.link_orbit_size[orbit])

    @functools.cached_property
    def link_orbit(self) -> np.ndarray:
        """Per link, the lowest link id of its orbit under the group."""
        return _lowest_in_orbit([generator.link for generator in self.generators])

    @functools.cached_property
    def channel_orbit(self) -> np.ndarray:
        """Per channel, the lowest channel id of its orbit under the group."""
        return _lowest_in_orbit([generator.channel for generator in self.generators])

    def quotient(self, codes: np.ndarray) -> np.ndarray:
        """The CDG edges ``codes`` (``a * channels + b``) with each channel replaced by its
        orbit's lowest id, sorted, each once: the closure's edges map onto exactly these
        (every image of an edge joins the same two orbits), so where they make no cycle
        neither does the closure (a cycle would map onto a closed walk here)."""
        orbit = self.channel_orbit
        return distinct(
            orbit[codes // self.channels] * self.channels + orbit[codes % self.channels]
        )

    @functools.cached_property
    def _identity(self) -> np.ndarray:
        """Every channel to itself (HyperZ's processor permutations move no channel)."""
        return np.arange(self.channels)

    @functools.cached_property
    def link_orbit_size(self) -> np.ndarray:
        return np.bincount(self.link_orbit, minlength=len(self.link_orbit))

    def spot_check_members(self, seed: int = 1) -> list[int]:
        """:data:`SPOT_CHECKS` destinations that are no representative, chosen by ``seed``."""
        others = sorted(member for orbit in self.orbits for member in orbit[1:])
        return sorted(random.Random(seed).sample(others, min(SPOT_CHECKS, len(others))))

    # the maps a walk's results go through

    def map_edges(self, generator: _Generator, codes: np.ndarray) -> np.ndarray:
        """CDG edges as ``a * channels + b`` codes."""
        channel = generator.channel
        return channel[codes // self.channels] * self.channels + channel[codes % self.channels]

    @staticmethod
    def map_links(generator: _Generator, values: np.ndarray) -> np.ndarray:
        """A value per link (the loads)."""
        mapped = np.empty_like(values)
        mapped[generator.link] = values
        return mapped

    @staticmethod
    def map_endpoints(generator: _Generator, values: np.ndarray) -> np.ndarray:
        """A value per endpoint (the hops from each source)."""
        mapped = np.empty_like(values)
        mapped[generator.endpoint] = values
        return mapped

    def mismatch(self, what: str, destination: int) -> PlanError:
        return PlanError(
            f"the {self.family} routing does not commute with its declared symmetries: the"
            f" {what} toward endpoint {destination} differ from its representative's mapped"
        )


def _lowest_in_orbit(maps: Sequence[np.ndarray]) -> np.ndarray:
    """Per id, the lowest id of its orbit under the permutations ``maps`` (id i goes to
    ``map[i]``): labels pass both ways along every map until none lowers."""
    orbit = np.arange(len(maps[0]))
    while True:
        lowest = orbit.copy()
        for image in maps:
            lowest = np.minimum(lowest, lowest[image])
            lowest[image] = np.minimum(lowest[image], lowest)
        lowest = lowest[lowest]
        if np.array_equal(lowest, orbit):
            return orbit
        orbit = lowest


def relabelled_ports(
    plan: FabricPlan, switch_map: Sequence[int], relabel: Callable[[Switch, Port], Port]
) -> tuple[tuple[int, ...], ...]:
    """Per switch, the port map taking each port to the port of the image switch that carries
    the label ``relabel`` gives it, parallel ports (equal labels) in their order; a label the
    image lacks is left to :func:`symmetry_group`'s check (the port maps to itself)."""
    result = []
    for switch in plan.switches:
        image = plan.switches[switch_map[switch.id]]
        where: dict[tuple, int] = {}
        count: dict[tuple, int] = {}
        for index, port in enumerate(image.ports):
            label = _label(port)
            lane = count.get(label, 0)
            where[(label, lane)] = index
            count[label] = lane + 1
        seen: dict[tuple, int] = {}
        ports = []
        for index, port in enumerate(switch.ports):
            label = _label(relabel(switch, port))
            lane = seen.get(label, 0)
            ports.append(where.get((label, lane), index))
            seen[label] = lane + 1
        result.append(tuple(ports))
    return tuple(result)


def _label(port: Port) -> tuple:
    """A port's fields as a tuple (hashed faster than the dataclass)."""
    return port.role, port.dim, port.sign, port.group


def distinct(codes: np.ndarray) -> np.ndarray:
    """``codes`` sorted, each once (by sorting: numpy's hashing ``unique`` is slower here)."""
    codes = np.sort(codes)
    return codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if len(codes) else codes


def channel_ids(plan: FabricPlan) -> tuple[np.ndarray, int]:
    """(per link, its first channel id; the number of channels): channel (link, VC) is
    ``base[link] + vc``, the ids the proof and the symmetries share."""
    vcs = np.array([link.vcs for link in plan.links], dtype=np.int64)
    base = np.concatenate(([0], np.cumsum(vcs)[:-1])) if len(vcs) else np.zeros(0, np.int64)
    return base, int(vcs.sum())


def symmetry_group(plan: FabricPlan, symmetries: Sequence[Symmetry]) -> SymmetryGroup | None:
    """The group of ``symmetries`` (each verified an automorphism of ``plan``), or None when
    there is none or it leaves every destination alone."""
    if not symmetries:
        return None
    base, channels = channel_ids(plan)
    family = f"{plan.topology} {plan.routing.name}"
    generators = [_verify(plan, symmetry, base, family) for symmetry in symmetries]
    orbits, tree = _orbits(len(plan.endpoints), generators)
    if len(orbits) == len(plan.endpoints):
        return None
    return SymmetryGroup(family, generators, channels, base, orbits, tree)


def _orbits(
    endpoints: int, generators: list[_Generator]
) -> tuple[list[list[int]], dict[int, tuple[int, int]]]:
    """The orbits of the endpoints in breadth-first order from their lowest member."""
    maps = [generator.endpoint.tolist() for generator in generators]
    seen = [False] * endpoints
    orbits, tree = [], {}
    for start in range(endpoints):
        if seen[start]:
            continue
        seen[start] = True
        orbit = [start]
        for member in orbit:  # grows as it goes: breadth first
            for index, image in enumerate(maps):
                other = image[member]
                if not seen[other]:
                    seen[other] = True
                    tree[other] = (member, index)
                    orbit.append(other)
        orbits.append(orbit)
    return orbits, tree


def _verify(plan: FabricPlan, symmetry: Symmetry, base: np.ndarray, family: str) -> _Generator:
    """``symmetry`` as id maps, after checking it is an automorphism of ``plan``: switches,
    ports (roles kept), links (same VCs and latency), endpoints (attachments and their modes;
    an ``in`` attachment through the input map)."""

    def refuse(why: str) -> PlanError:
        return PlanError(f"the {family} symmetry {symmetry.name!r} is no automorphism: {why}")

    switches, endpoints = plan.switches, plan.endpoints
    if sorted(symmetry.switch) != list(range(len(switches))):
        raise refuse("its switch map is no permutation")
    if sorted(symmetry.endpoint) != list(range(len(endpoints))):
        raise refuse("its endpoint map is no permutation")
    inputs = symmetry.in_port or symmetry.port
    for switch, ports, entries in zip(switches, symmetry.port, inputs, strict=True):
        image = switches[symmetry.switch[switch.id]]
        every = list(range(switch.radix))
        if sorted(ports) != every or sorted(entries) != every or image.radix != switch.radix:
            raise refuse(f"{switch.name}'s ports do not map onto {image.name}'s")
        for index, port in enumerate(switch.ports):
            if image.ports[ports[index]].role != port.role:
                raise refuse(f"{switch.name}.p{index} is a {port.role} port, its image is not")
    out = {(link.src.switch, link.src.port): link for link in plan.links}
    link_map = np.empty(len(plan.links), dtype=np.int64)
    channel_map = np.empty(int(base[-1] + plan.links[-1].vcs) if plan.links else 0, np.int64)
    for link in plan.links:
        src, dst = link.src, link.dst
        image = out.get((symmetry.switch[src.switch], symmetry.port[src.switch][src.port]))
        goes = (symmetry.switch[dst.switch], inputs[dst.switch][dst.port])
        if image is None or (image.dst.switch, image.dst.port) != goes:
            raise refuse(f"the link from {switches[src.switch].name}.p{src.port} has no image")
        if (image.vcs, image.latency) != (link.vcs, link.latency):
            raise refuse(f"the link from {switches[src.switch].name}.p{src.port} changes VCs")
        vcs = symmetry.vcs[link.id] if symmetry.vcs else tuple(range(link.vcs))
        if sorted(vcs) != list(range(link.vcs)):
            raise refuse(
                f"the VC map of the link from {switches[src.switch].name} is no permutation"
            )
        link_map[link.id] = image.id
        channel_map[base[link.id] : base[link.id] + link.vcs] = base[image.id] + np.array(vcs)
    for endpoint in endpoints:
        image = endpoints[symmetry.endpoint[endpoint.id]]
        moved = tuple(
            (symmetry.switch[a.switch], _attached_port(symmetry.port, inputs, a, endpoint.mode(i)))
            for i, a in enumerate(endpoint.attachments)
        )
        if moved != tuple((a.switch, a.port) for a in image.attachments) or [
            endpoint.mode(i) for i in range(len(moved))
        ] != [image.mode(i) for i in range(len(moved))]:
            raise refuse(f"{endpoint.name}'s attachments do not map onto {image.name}'s")
    return _Generator(
        symmetry.name,
        np.array(symmetry.switch, dtype=np.int64),
        link_map,
        channel_map,
        np.array(symmetry.endpoint, dtype=np.int64),
    )


def _attached_port(
    outputs: Sequence[Sequence[int]], inputs: Sequence[Sequence[int]], ref: PortRef, mode: str
) -> int | None:
    """Where an attachment's port goes: an ``in`` one with its input, an ``out`` one with its
    output, a ``both`` one with both (None where they part: no image)."""
    out, entry = outputs[ref.switch][ref.port], inputs[ref.switch][ref.port]
    if mode == "in":
        return entry
    return out if mode == "out" or out == entry else None
