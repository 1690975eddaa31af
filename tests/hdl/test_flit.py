# amaranth: UnusedElaboratable=no
"""Flit layout and link signature, from the plans of the examples."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In
from zfabric.hdl.flit import FlitKind, FlitLayout, LinkSignature, head_width

from zfabric import compile_plan, load_spec
from zfabric.plan import PlanView
from zfabric.routing import make_routing


def plan_of(example, name):
    return compile_plan(load_spec(example(name)))


@pytest.mark.parametrize(
    "name, vc_width", [("torus-4x4", 1), ("ndt-2x2x2", 2), ("znode-64", 0), ("snode-128", 0)]
)
def test_layout_from_plan(example, name, vc_width):
    plan = plan_of(example, name)
    layout = FlitLayout.from_plan(plan)
    assert layout.payload_width == plan.flit_width
    # the VC field holds the largest VC index of any link (4 on the nDT internal link)
    assert (1 << layout.vc_width) >= max(link.vcs for link in plan.links)
    assert layout.vc_width == vc_width
    # the head and the source id ride beside the payload, which is all data
    assert layout.head_width == head_width(plan)
    assert layout.src_width == (len(plan.endpoints) - 1).bit_length()
    assert layout.size == 2 + vc_width + layout.head_width + layout.src_width + plan.flit_width


def test_torus_link_is_head_and_source_wider(example):
    """torus-4x4: 16 endpoints, so a 4-bit destination head and a 4-bit source beside the
    32-bit payload, 2 kind bits and 1 VC bit: 35 bits before the head had its own field."""
    layout = FlitLayout.from_plan(plan_of(example, "torus-4x4"))
    assert (layout.head_width, layout.src_width, layout.size) == (4, 4, 43)


@pytest.mark.parametrize("name", ["torus-4x4", "ndt-2x2x2", "znode-64", "snode-128"])
def test_head_width_holds_every_head_the_routing_writes(example, name):
    plan = plan_of(example, name)
    routing = make_routing(PlanView(plan))
    width = head_width(plan)
    widest = 0
    n = len(plan.endpoints)
    for src in range(0, n, max(1, n // 16)):
        for dst in range(n):
            if dst != src:
                for choice in routing.injections(src, dst):
                    head = choice.head
                    bits = head[1] if isinstance(head, tuple) else head.bit_length()
                    widest = max(widest, bits)
    assert widest <= width


def test_kind_bits():
    # bit 0 marks a head, bit 1 a tail: the RTL decodes kinds with two AND gates
    assert [k.value & 1 for k in FlitKind] == [0, 1, 0, 1]
    assert [k.value >> 1 for k in FlitKind] == [0, 0, 1, 1]


def test_layout_packs_and_unpacks():
    """LSB first: kind, vc, head, src, then the 32 data bits whole."""
    layout = FlitLayout(payload_width=32, vc_width=2, head_width=6, src_width=5)
    fields = {"kind": FlitKind.HEAD, "vc": 3, "head": 0x2A, "src": 0x11, "payload": 0xDEADBEEF}
    bits = layout.const(fields).as_bits()
    assert bits == 1 | 3 << 2 | 0x2A << 4 | 0x11 << 10 | 0xDEADBEEF << 15
    flit = layout.from_bits(bits)
    assert flit.kind == FlitKind.HEAD and flit.vc == 3 and flit.payload == 0xDEADBEEF
    assert (flit.head, flit.src) == (0x2A, 0x11)


def test_layout_errors():
    with pytest.raises(TypeError, match=r"^payload_width must be a positive integer, not 0$"):
        FlitLayout(payload_width=0, vc_width=0, head_width=1, src_width=1)
    with pytest.raises(TypeError, match=r"^src_width must be a positive integer, not 0$"):
        FlitLayout(payload_width=8, vc_width=0, head_width=1, src_width=0)
    # a head wider than the payload is fine: it has its own field
    assert FlitLayout(payload_width=8, vc_width=0, head_width=40, src_width=1).size == 51


def test_link_signature():
    layout = FlitLayout(payload_width=16, vc_width=1, head_width=4, src_width=3)
    link = LinkSignature(layout, 2)
    assert link == LinkSignature(layout, 2)
    assert link != LinkSignature(layout, 1)
    assert repr(link) == (
        "LinkSignature(FlitLayout(payload_width=16, vc_width=1, head_width=4, src_width=3), 2)"
    )
    assert link.members["credit"] == In(2)
    with pytest.raises(ValueError, match=r"^3 VCs do not fit the flit's 1-bit VC field$"):
        LinkSignature(layout, 3)


def test_link_refuses_a_backpressured_sink():
    layout = FlitLayout(payload_width=16, vc_width=0, head_width=4, src_width=1)
    link = LinkSignature(layout, 1).create()
    sink = stream.Signature(layout).flip().create()
    with pytest.raises(wiring.ConnectionError, match="has a constant value 1"):
        wiring.connect(Module(), link.flit, sink)
