"""The switch's flat output-VC numbering and the interface every route unit has."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import PlanView
from zfabric.routing.base import Hop

__all__ = ["SwitchPorts", "candidate_mask", "RouteUnitSignature"]


@dataclass(frozen=True)
class SwitchPorts:
    """Per-port output VC counts of one switch (a local port's: ``router.ejection_vcs``) and
    whether each port faces an endpoint.

    Output VCs are numbered flat: port ``o``'s VC ``w`` is ``base[o] + w``. A port's input and
    output may face different neighbours (one-way channels): ``in_vcs`` and ``in_local`` then
    give its input's link VCs and whether no link feeds it (an endpoint injects there, or
    nothing: an unused input); empty, the input is as the output.
    """

    vcs: tuple[int, ...]
    local: tuple[bool, ...]
    in_vcs: tuple[int, ...] = ()
    in_local: tuple[bool, ...] = ()

    @classmethod
    def from_plan(cls, view: PlanView, switch: int) -> SwitchPorts:
        vcs, local, in_vcs, in_local = [], [], [], []
        for port in range(view.switches[switch].radix):
            into, out = view.in_link[switch][port], view.out_link[switch][port]
            vcs.append(out.vcs if out else view.plan.router.ejection_vcs)
            local.append(out is None)
            in_vcs.append(into.vcs if into else vcs[-1])
            in_local.append(into is None)
        if (in_vcs, in_local) == (vcs, local):
            return cls(tuple(vcs), tuple(local))
        return cls(tuple(vcs), tuple(local), tuple(in_vcs), tuple(in_local))

    def input_local(self, port: int) -> bool:
        """No link feeds input ``port``: an endpoint injects there (or nothing does)."""
        return (self.in_local or self.local)[port]

    def input_link_vcs(self, port: int) -> int:
        """The VCs of the link into input ``port`` (meaningless where :meth:`input_local`)."""
        return (self.in_vcs or self.vcs)[port]

    @property
    def n_ports(self) -> int:
        return len(self.vcs)

    @property
    def n_out_vcs(self) -> int:
        return sum(self.vcs)

    def base(self, port: int) -> int:
        return sum(self.vcs[:port])


def candidate_mask(hops: tuple[Hop, ...], ports: SwitchPorts, *, ordered: bool = True) -> int:
    """The flat output-VC mask of a decision's candidates.

    ``ordered``: the switch selects first-free (lowest flat index first), so the priority order
    must be ascending. Round-robin selection picks by output port from the input port's pointer
    whatever the order (docs/microarchitecture.md, step 2): then the mask is the candidate set,
    which is how adaptive routings (escape hop last, after higher VCs of the same port) get one.
    """
    mask, last = 0, -1
    for hop in hops:
        for vc in hop.vcs:
            if not 0 <= vc < ports.vcs[hop.port]:
                raise ValueError(f"candidate {hop!r}: port {hop.port} has no VC {vc}")
            bit = ports.base(hop.port) + vc
            repeated = bit <= last if ordered else mask >> bit & 1
            if repeated:
                raise ValueError(
                    f"candidates {hops!r} are not in ascending (port, VC) order: the first-free "
                    f"rule cannot be a priority encoder"
                    if ordered
                    else f"candidates {hops!r} offer ({hop.port}, {vc}) twice"
                )
            mask |= 1 << bit
            last = bit
    return mask


class RouteUnitSignature(wiring.Signature):
    """``head`` (and ``identity``, if any) in; ``cand`` (flat output-VC mask), ``next_head`` out.

    With ``max_flits`` (heads that shrink and span several flits, ``router.head_bits``) also
    ``flits``, the head flits of the head at the input (1 to ``max_flits``), and ``skip``, how
    many of them the next head no longer needs (docs/microarchitecture.md, *Heads longer than
    a flit*)."""

    def __init__(
        self, head_width: int, n_out_vcs: int, identity_width: int = 0, max_flits: int = 0
    ):
        self._head_width, self._n_out_vcs = head_width, n_out_vcs
        self._identity_width = identity_width
        self._max_flits = max_flits
        members = {"head": In(head_width), "cand": Out(n_out_vcs), "next_head": Out(head_width)}
        if identity_width:
            members["identity"] = In(identity_width)
        if max_flits:
            members["flits"] = Out(range(max_flits + 1))
            members["skip"] = Out(range(max_flits))
        super().__init__(members)

    def __eq__(self, other):
        return isinstance(other, RouteUnitSignature) and self._params() == other._params()

    def __hash__(self):
        return hash((RouteUnitSignature, self._params()))

    def _params(self):
        return self._head_width, self._n_out_vcs, self._identity_width, self._max_flits

    def __repr__(self):
        return f"RouteUnitSignature{self._params()!r}"
