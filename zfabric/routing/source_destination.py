"""Source-destination (XGFT turn-back) addressing on Znode / Snode fabrics: a baseline.

After Peratikou's Znode thesis (Portsmouth, 2014), ch. 4 (and its XGFT turn-back, ch. 2): the head
carries the source and the destination addresses, and every switch compares them to find the
common ancestor. A switch at level i on the way up is an ancestor of the source, so its own
zone is the source's labels above level i: the destination is under it exactly when those
labels equal the destination's. Then it turns: down by the destination's label p_i (or, in a
super node, sideways when the Znode ids differ and level i has side links; else it keeps
climbing, so the side hop is at the lowest level >= the peer level with side channels, as
sliced routing takes it, digest §7.6). Otherwise it goes up through any up port (the adaptive
pool, as sliced).

Head: ``src_address | dst_address << A``, both eq. 6.3 bit-field addresses of A bits
(:func:`~zfabric.routing.flat.address_fields`). No switch rewrites it: both addresses ride to
the destination (the thesis's cost: (n + 1) log2 P header bits on average, eq. 4.4).

Per-switch decision, from the input port's role and the switch's level:

- ``local`` or ``down`` input at level i: source and destination labels of levels i+1..n
  equal (always true at the top) and same Znode: down group p_i; equal labels, other Znode
  and h_i > 0: the side ports toward the destination's Znode; otherwise every up port.
- ``up`` or ``side`` input at level i: down group p_i.

Hops are those of sliced routing: 2c - 2 switch-to-switch links for common level c within a
Znode, 2c - 1 across (thesis: 2c and 2c + 1 with the processor links). Routes are
up* -> (at most one side hop) -> down*: deadlock-free with one VC (digest §2.7).
"""

from __future__ import annotations

from ..plan import FabricPlan
from .base import Decision, routing
from .flat import ZnodeAddressing, address_width

__all__ = ["SourceDestination"]


@routing("source_destination")
class SourceDestination(ZnodeAddressing):
    """Turn-back routing: compare source and destination above this level; turn or climb."""

    @classmethod
    def head_width(cls, plan: FabricPlan) -> int:
        """Source and destination eq. 6.3 addresses (2 log2 P bits for powers of 2)."""
        return max(1, 2 * address_width(plan.routing.params["z"], plan.routing.params["znodes"]))

    def head(self, src: int, dst: int) -> int:
        return self.address(src) | self.address(dst) << self.width

    def route(self, switch: int, in_port: int, in_vc: int, head: int) -> Decision:
        level = self.level[switch]
        src, dst = head & ((1 << self.width) - 1), head >> self.width
        if self.kind[switch][in_port] == "down":
            low, high = self.offset[level + 1], self.offset[self.n + 1]
            if (src ^ dst) >> low & ((1 << (high - low)) - 1) == 0:  # labels above i equal
                if self.znode(src) == self.znode(dst):
                    return self.go_down(switch, dst, head)
                if self.side[level - 1] > 0:
                    return Decision(self.across[switch].get(self.znode(dst), ()), head)
            return Decision(self.up[switch], head)
        return self.go_down(switch, dst, head)
