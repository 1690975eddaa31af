"""Endpoint beats <-> integers, and the data words that identify a packet's flits.

A fabric's endpoint streams carry ``PacketInLayout`` beats in (``data``, ``dst``, ``first``,
``last``) and ``PacketOutLayout`` beats out (``data``, ``first``, ``last``), packed LSB first as
Amaranth lays out a ``StructLayout`` (hdl/endpoint.py). The field offsets are read from those
layouts once, so packing a beat in the simulator is plain integer arithmetic.

A packet's identity is (source, sequence number), as in the reference model. Every flit carries
it in its data word with the flit's index (:func:`data_word`, the encoding of
tests/hdl/hdl_bench.py). The head flit loses its top ``head_width`` data bits to the routing
head, so on delivery its data is the word truncated to ``data_width`` bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from zfabric.plan import FabricPlan

__all__ = [
    "PacketCodec",
    "OutBeat",
    "data_word",
]


def data_word(width: int, src: int, sequence: int, index: int) -> int:
    """The data of flit ``index`` of packet (``src``, ``sequence``), truncated to ``width``."""
    return ((sequence << 12 | src) << 4 | index) & ((1 << width) - 1)


@dataclass(frozen=True)
class OutBeat:
    data: int
    first: bool
    last: bool


class PacketCodec:
    """Packs injection beats and unpacks ejection beats of ``plan``'s fabric.

    Attributes
    ----------
    payload_width : int
        Bits of a flit's payload (``plan.flit_width``).
    head_width : int
        Low payload bits of a head flit that hold the routing head.
    data_width : int
        Data bits a head flit delivers: ``payload_width - head_width``.
    """

    def __init__(self, plan: FabricPlan):
        from zfabric.hdl.endpoint import PacketInLayout, PacketOutLayout, dst_width
        from zfabric.hdl.flit import FlitLayout

        layout = FlitLayout.from_plan(plan)
        self.payload_width = layout.payload_width
        self.head_width = layout.head_width
        self.data_width = layout.data_width
        self.dst_width = dst_width(plan)
        beat_in = PacketInLayout(layout, self.dst_width)
        beat_out = PacketOutLayout(layout)
        self._in = {name: beat_in[name].offset for name in ("data", "dst", "first", "last")}
        self._out = {name: beat_out[name].offset for name in ("data", "first", "last")}
        self._data_mask = (1 << self.payload_width) - 1
        self._head_mask = (1 << self.data_width) - 1

    def word(self, src: int, sequence: int, index: int) -> int:
        return data_word(self.payload_width, src, sequence, index)

    def delivered_word(self, src: int, sequence: int, index: int) -> int:
        """What flit ``index`` of the packet carries out of the fabric."""
        word = self.word(src, sequence, index)
        return word & self._head_mask if index == 0 else word

    def pack_in(self, data: int, dst: int, first: bool, last: bool) -> int:
        offsets = self._in
        return (
            (data & self._data_mask) << offsets["data"]
            | dst << offsets["dst"]
            | int(first) << offsets["first"]
            | int(last) << offsets["last"]
        )

    def unpack_out(self, value: int) -> OutBeat:
        offsets = self._out
        return OutBeat(
            (value >> offsets["data"]) & self._data_mask,
            bool(value >> offsets["first"] & 1),
            bool(value >> offsets["last"] & 1),
        )
