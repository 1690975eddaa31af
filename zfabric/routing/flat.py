"""Flat addressing on Znode / Snode fabrics: a baseline sliced addressing is compared against.

After Peratikou's Znode thesis (Portsmouth, 2014), ch. 4's baseline schemes: the head is the
destination's address; a packet always climbs to the top level n ("from a lower input it goes
straight to the upper output port, by selecting any available port, without any decision
making"), turns there, and goes down by destination tag: the level-j switch reads the
destination's label p_j. In a super node the top switch compares the Znode id with its own
(SID) and takes the side hop when they differ (specs refuse m > 1 without top-level side links).

Head: the destination's eq. 6.3 bit-field address (:func:`address_fields`): label p_j in
ceil(log2 z_j) bits, p_1 lowest, the Znode id on top. No switch rewrites it (the head passes
unchanged; each level reads its own field at a fixed offset), so it keeps its full length
at every hop, unlike the sliced head.

Per-switch decision, from the input port's role and the switch's level and SID:

- ``local`` or ``down`` input below the top level: every up port (the adaptive pool, as sliced).
- ``local`` or ``down`` input at the top level: if m > 1 and the Znode id is not the SID, the
  side ports toward it; otherwise down group p_n.
- ``up`` or ``side`` input at level j: down group p_j (at level 1 the destination's local port).

Hops: every route climbs all n levels, whatever the common level: 2n - 2 switch-to-switch links
within a Znode, 2n - 1 across Znodes (the thesis counts the two processor links too: 2n and
2n + 1). Routes are
up* -> (at most one side hop) -> down*: deadlock-free with one VC (digest §2.7).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from ..plan import FabricPlan
from ..topologies.znode import field_width, labels
from .base import Decision, Injection, routing
from .znode_ports import ZnodeRouting

__all__ = ["Flat", "ZnodeAddressing", "address_fields", "address_offsets", "address_width"]


def address_fields(endpoint: int, z: Sequence[int], znodes: int) -> list[tuple[int, int]]:
    """Endpoint ``endpoint``'s eq. 6.3 address as (value, bits) fields, p_1 first, Znode id last
    (0 bits when m = 1)."""
    k, x = divmod(endpoint, math.prod(z))
    fields = [(label, field_width(zj)) for label, zj in zip(labels(x, z), z, strict=True)]
    return fields + [(k, field_width(znodes))]


def address_offsets(z: Sequence[int]) -> list[int]:
    """Bit offset of label p_j in an eq. 6.3 address, indexed by level j = 1..n (index 0 is
    unused); index n + 1 is the Znode id's offset."""
    widths = [field_width(zj) for zj in z]
    return [0] + [sum(widths[: j - 1]) for j in range(1, len(z) + 2)]


def address_width(z: Sequence[int], znodes: int) -> int:
    """Bits of an eq. 6.3 address: sum of ceil(log2 z_j), plus ceil(log2 m)."""
    return sum(field_width(zj) for zj in z) + field_width(znodes)


def pack(fields: Sequence[tuple[int, int]]) -> int:
    value = shift = 0
    for field, bits in fields:
        value |= field << shift
        shift += bits
    return value


class ZnodeAddressing(ZnodeRouting):
    """What the address-carrying Znode routings (flat, source-destination) share: the port
    groups of every switch as hops, the field offsets of an address, and injection on every
    attachment (every layer and level-1 switch of the source's zone, as sliced)."""

    def __init__(self, view):
        super().__init__(view)
        self.n = len(self.z)
        self.offset = address_offsets(self.z)
        self.width = address_width(self.z, self.znodes)

    def address(self, endpoint: int) -> int:
        return pack(address_fields(endpoint, self.z, self.znodes))

    def label(self, address: int, level: int) -> int:
        """Label p_level of an address."""
        return (address >> self.offset[level]) & ((1 << self.label_bits[level]) - 1)

    def znode(self, address: int) -> int:
        return address >> self.offset[self.n + 1]

    def head(self, src: int, dst: int) -> int:
        raise NotImplementedError

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        head = self.head(src, dst)
        return tuple(Injection(switch, port, head) for switch, port in self.attachments[src])

    def go_down(self, switch: int, address: int, head: int) -> Decision:
        label = self.label(address, self.level[switch])
        return Decision(self.down[switch].get(label, ()), head)

    def state_key(self, switch: int, in_port: int, in_vc: int, head: int) -> Hashable:
        """``route`` sees the input port only through its role (and never the VC)."""
        return switch, self.kind[switch][in_port], head


@routing("flat")
class Flat(ZnodeAddressing):
    """Flat addressing: up to the top level always, then down by destination tag."""

    @classmethod
    def head_width(cls, plan: FabricPlan) -> int:
        """The destination's eq. 6.3 address (log2 P bits when every z_j is a power of 2)."""
        return max(1, address_width(plan.routing.params["z"], plan.routing.params["znodes"]))

    def head(self, src: int, dst: int) -> int:
        return self.address(dst)

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        level = self.level[switch]
        if self.kind[switch][in_port] == "down":
            if level < self.n:
                return Decision(self.up[switch], head)
            zid = self.znode(head)
            if zid != self.sid[switch]:
                return Decision(self.across[switch].get(zid, ()), head)
        return self.go_down(switch, head, head)
