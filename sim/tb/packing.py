"""The data words of a packet's flits.

A packet's identity is (source, sequence number), as in the reference model. Every flit's data
word is a pseudo-random function of that identity and the flit's index (:func:`data_word`),
``flit_width`` bits wide: every data bit of every beat, the first one included, is checked on
delivery, and a head word tells the packets of one destination apart (the scoreboard keys
packets in flight by it).
"""

from __future__ import annotations

from zfabric.plan import FabricPlan

__all__ = [
    "PacketCodec",
    "data_word",
]

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    """One output of splitmix64 for state ``x`` (Steele, Lea and Flood, 2014)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def data_word(width: int, src: int, sequence: int, index: int) -> int:
    """The ``width``-bit data of flit ``index`` of packet (``src``, ``sequence``): 64 bits of
    splitmix64 per 64 bits of width, from a state that packs the three."""
    state = (sequence << 32 | src << 16 | index) & _MASK64
    word, bits = 0, 0
    while bits < width:
        state = _splitmix64(state)
        word |= state << bits
        bits += 64
    return word & ((1 << width) - 1)


class PacketCodec:
    """The data words of ``plan``'s packets (``payload_width``: ``plan.flit_width`` bits)."""

    def __init__(self, plan: FabricPlan):
        self.payload_width = plan.flit_width

    def word(self, src: int, sequence: int, index: int) -> int:
        return data_word(self.payload_width, src, sequence, index)
