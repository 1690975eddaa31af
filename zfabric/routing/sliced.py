"""Single-bit sliced addressing for Znode / Snode fabrics (Peratikou, 2014).

The source computes the whole route; switches hold no tables, only their level (which fixes the
field widths) and their Znode id (SID).

Head layout. The head is ``(value, width)``: ``width`` bits packed LSB-first in the order the
switches consume them. A switch pops a ``w``-bit field as ``value & (2**w - 1)``, then
``value >>= w`` and ``width -= w``; the RTL shifts exactly this. For a packet turning at level c:

====================  =====================  ==============================================
bits (from bit 0)     field                  consumed by
====================  =====================  ==============================================
c - 1                 one-bits f_1..f_{c-1}  one per level-1..c-1 switch on the way up: 1 = up
1                     zero bit f_c           the level-c switch: turn here
ceil(log2 m)          destination Znode id   the level-c switch, only when m > 1 (else absent)
ceil(log2 z_c)        label p_c              the level-c switch (or, after a side hop, the
                                             level-c switch of the destination Znode)
ceil(log2 z_j)        label p_j, j = c-1..1  the level-j switch on the way down
====================  =====================  ==============================================

Labels are the destination's eq. 6.1 labels; a field of a level with z_j = 1 has 0 bits. At
delivery the remaining width is 0. Across Znodes c is the peer level, raised to the lowest
level >= c whose side channels h are > 0 (digest §7.6): higher zones match too, so the extra
one-bits are valid.

Per-switch decision (§2.4), from the input port's role only:

- ``local`` or ``down`` input: pop 1 bit. 1: every up port is a candidate (the adaptive pool).
  0: if m > 1 pop the Znode id; if it differs from the SID, the candidates are the side ports
  toward that Znode (the labels stay in the head). Otherwise pop the label and go down.
- ``up`` or ``side`` input: pop the label and go down.
- going down at level j means every port of down group p_j; at level 1 that group is the one
  ``local`` port of the destination processor.

Candidates within a group are all its ports, each with all VCs of its link; the switch takes
the first free one with a credit (docs/microarchitecture.md, step 2). Injection: one choice
per attachment (all l * R_1 interfaces).
Deadlock freedom: every route is up* -> (at most one side hop) -> down*, so channel ranks
strictly increase (digest §2.7) and one VC suffices.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from ..plan import FabricPlan
from ..topologies.znode import common_level, field_width, labels
from .base import Decision, Injection, routing
from .znode_ports import ZnodeRouting

__all__ = ["Sliced", "header_fields", "header_length", "pack_fields", "pop_field"]

Head = tuple[int, int]


def header_fields(
    src: int, dst: int, z: Sequence[int], znodes: int, side: Sequence[int]
) -> list[tuple[int, int]]:
    """The head's fields as (value, bits), in consumption order, for endpoint ids src -> dst."""
    zone_size = math.prod(z)
    src_k, src_x = divmod(src, zone_size)
    dst_k, dst_x = divmod(dst, zone_size)
    p, q = labels(src_x, z), labels(dst_x, z)
    c = common_level(p, q)
    if src_k != dst_k:
        while side[c - 1] == 0:
            c += 1
    fields = [(1, 1)] * (c - 1) + [(0, 1)]
    if znodes > 1:
        fields.append((dst_k, field_width(znodes)))
    fields += [(q[j - 1], field_width(z[j - 1])) for j in range(c, 0, -1)]
    return fields


def header_length(z: Sequence[int], znodes: int, turn: int) -> int:
    """Bits of the head a source writes for a packet that turns at level ``turn``
    (:func:`header_fields`): a bit per level up to it, the Znode id where there are several,
    and the labels of levels ``turn`` to 1. Each switch pops its fields off the front."""
    zid_bits = field_width(znodes) if znodes > 1 else 0
    return turn + zid_bits + sum(field_width(zj) for zj in z[:turn])


def pack_fields(fields: Sequence[tuple[int, int]]) -> Head:
    """Pack (value, bits) fields LSB-first into a head ``(value, width)``."""
    value = width = 0
    for field, bits in fields:
        value |= field << width
        width += bits
    return value, width


def pop_field(head: Head, bits: int) -> tuple[int, Head]:
    """Pop the next ``bits``-bit field: (field value, remaining head)."""
    value, width = head
    return value & ((1 << bits) - 1), (value >> bits, width - bits)


@routing("sliced")
class Sliced(ZnodeRouting):
    """Source-routed Znode/Snode routing: up adaptive, one side hop, down by label."""

    @classmethod
    def head_width(cls, plan: FabricPlan) -> int:
        """The widest header, turning at the top level: a level bit per level, the Znode id
        (when there are several) and one label per level."""
        z, znodes = plan.routing.params["z"], plan.routing.params["znodes"]
        return len(z) + field_width(znodes) + sum(field_width(zj) for zj in z)

    def __init__(self, view):
        super().__init__(view)
        self.zone_size = math.prod(self.z)
        self.under = [math.prod(self.z[:i]) for i in range(len(self.z) + 1)]
        self._heads: dict[tuple[int, int, bool], Head] = {}

    def head(self, src: int, dst: int) -> Head:
        """The head ``src`` writes for ``dst`` (cached: it depends only on the turn level)."""
        (src_k, src_x), (dst_k, dst_x) = divmod(src, self.zone_size), divmod(dst, self.zone_size)
        c = 1
        while src_x // self.under[c] != dst_x // self.under[c]:
            c += 1
        key = (dst, c, src_k == dst_k)
        head = self._heads.get(key)
        if head is None:
            head = self._heads[key] = pack_fields(
                header_fields(src, dst, self.z, self.znodes, self.side)
            )
        return head

    def head_length(self, head: Head) -> int:
        """The bits left: the head shrinks by the fields each switch pops."""
        return head[1]

    def head_of_value(self, value: int, width: int) -> Head:
        """A whole ``width``-bit header."""
        return value, width

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        head = self.head(src, dst)
        return tuple(Injection(switch, port, head) for switch, port in self.attachments[src])

    def route(self, switch: int, in_port: int, in_vc: int, head: Head) -> Decision:
        if self.kind[switch][in_port] == "down":
            if head[1] < 1:
                return Decision((), head)
            bit, head = pop_field(head, 1)
            if bit:
                return Decision(self.up[switch], head)
            if self.zid_bits:
                if head[1] < self.zid_bits:
                    return Decision((), head)
                zid, head = pop_field(head, self.zid_bits)
                if zid != self.sid[switch]:
                    return Decision(self.across[switch].get(zid, ()), head)
        bits = self.label_bits[self.level[switch]]
        if head[1] < bits:
            return Decision((), head)
        label, head = pop_field(head, bits)
        return Decision(self.down[switch].get(label, ()), head)

    def state_key(self, switch: int, in_port: int, in_vc: int, head: Head) -> Hashable:
        """``route`` sees the input port only through its role (and never the VC)."""
        return switch, self.kind[switch][in_port], head
