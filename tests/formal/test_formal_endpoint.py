"""Endpoint receive side: buffer counts and presentation proven unbounded (presentation also
bounded on the ports alone), and planted bugs caught (hdl/formal/endpoint.py states the
properties)."""

from __future__ import annotations

import pytest
from zfabric.hdl.endpoint import Endpoint
from zfabric.hdl.formal.endpoint import EndpointHarness
from zfabric.hdl.formal.state import opened


class CreditWhileWaiting(Endpoint):
    """Planted bug: ejection VC 0 returns a credit every cycle its buffer holds a flit, taken
    or not (a credit returned twice, or more, for one flit)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.eject[0].credit[0].eq(self.o[0].valid)
        return m


class ForgetsPacket(Endpoint):
    """Planted bug: the endpoint forgets which VC's packet it is presenting every cycle, so
    another VC's flits can cut into a packet on the stream."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        fragment.add_statements("sync", signals["presenting0"].eq(0))  # the last one wins
        return fragment


@pytest.mark.parametrize("ejection_vcs", [1, 2, 4])
def test_buffers_proven(sby, ejection_vcs):
    result = sby(EndpointHarness(ejection_vcs=ejection_vcs, state=True), "prove", 2)
    assert result.status == "PASS", result.log


@pytest.mark.formal  # proven unbounded by default (test_presentation_proven)
def test_presentation_bounded(sby):
    # one ejection VC: its 4-flit buffer filled and drained past a wrap of the 3-bit tags
    harness = EndpointHarness(ejection_vcs=1, tag_width=3, check="presentation")
    result = sby(harness, "bmc", 10)
    assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    ("ejection_vcs", "buffer_depth"),
    # as the examples (B = 4, 1 or 2 ejection VCs), 4 VCs, and a depth that is no power of two
    [(1, 4), (2, 4), (4, 2), (2, 3)],
)
def test_presentation_proven(sby, ejection_vcs, buffer_depth):
    harness = EndpointHarness(
        ejection_vcs=ejection_vcs,
        buffer_depth=buffer_depth,
        tag_width=buffer_depth.bit_length() + 1,
        check="presentation",
        state=True,
    )
    result = sby(harness, "prove", 2)
    assert result.status == "PASS", result.log


def test_covers_reached(sby):
    # per VC: the buffer full, and the fifth flit taken
    result = sby(EndpointHarness(state=True), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 * 2
    # and a packet of the last VC after another's
    result = sby(EndpointHarness(tag_width=3, check="presentation"), "cover", 8)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 * 1 + 1


def test_credit_while_waiting_caught(sby):
    harness = EndpointHarness(state=True, unit_class=CreditWhileWaiting)
    assert sby(harness, "prove", 2).status == "FAIL"
    harness = EndpointHarness(check="presentation", tag_width=3, unit_class=CreditWhileWaiting)
    assert sby(harness, "bmc", 6).status == "FAIL"
    harness = EndpointHarness(
        check="presentation", tag_width=3, state=True, unit_class=CreditWhileWaiting
    )
    assert sby(harness, "prove", 2).status == "FAIL"


def test_forgotten_packet_caught(sby):
    harness = EndpointHarness(check="presentation", tag_width=3, unit_class=ForgetsPacket)
    result = sby(harness, "bmc", 8)
    assert result.status == "FAIL", result.log
    harness = EndpointHarness(
        check="presentation", tag_width=3, state=True, unit_class=ForgetsPacket
    )
    assert sby(harness, "prove", 2).status == "FAIL"


class ForgetsFirstData(Endpoint):
    """Planted bug: with head flits the first beat shows a stale register instead of the
    first flit's payload (the first flit's data is never kept)."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        data = signals["first_data0"]
        fragment.add_statements("sync", data.eq(data))  # the last one wins
        return fragment


class StripsOneTooFew(Endpoint):
    """Planted bug: the receive side strips one head flit less than the packets carry, so the
    last head flit's (meaningless) payload reaches the user as a beat."""

    def _receive(self, m, a):
        self._head_flits -= 1
        super()._receive(m, a)
        self._head_flits += 1


@pytest.mark.parametrize(("ejection_vcs", "head_flits"), [(1, 2), (2, 3), (2, 4)])
def test_head_flit_buffers_proven(sby, ejection_vcs, head_flits):
    harness = EndpointHarness(ejection_vcs=ejection_vcs, head_flits=head_flits, state=True)
    assert sby(harness, "prove", 2).status == "PASS"


def test_head_flit_presentation_bounded(sby):
    # on the ports alone, 10 cycles: a one-beat and a longer packet, or a fill of the buffer
    harness = EndpointHarness(ejection_vcs=1, head_flits=3, check="presentation")
    result = sby(harness, "bmc", 10)
    assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    ("ejection_vcs", "buffer_depth", "head_flits"),
    # 2 to 4 head flits (as flat and source_destination on znode-64 at 3 bits a flit: 2 and
    # 4), 1 and 2 ejection VCs, and a depth that is no power of two
    [(1, 4, 2), (2, 4, 2), (2, 4, 3), (1, 4, 4), (2, 3, 3)],
)
def test_head_flit_presentation_proven(sby, ejection_vcs, buffer_depth, head_flits):
    harness = EndpointHarness(
        ejection_vcs=ejection_vcs,
        buffer_depth=buffer_depth,
        tag_width=buffer_depth.bit_length() + 1,
        head_flits=head_flits,
        check="presentation",
        state=True,
    )
    result = sby(harness, "prove", 2)
    assert result.status == "PASS", result.log


@pytest.mark.formal
def test_head_flit_presentation_bounded_two_vcs(sby):
    harness = EndpointHarness(ejection_vcs=2, head_flits=3, check="presentation")
    result = sby(harness, "bmc", 10)
    assert result.status == "PASS", result.log


def test_head_flit_covers_reached(sby):
    # per VC the fifth flit's beat taken; a one-beat packet; a second VC's packet after another
    result = sby(EndpointHarness(head_flits=3, check="presentation"), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 + 1 + 1


@pytest.mark.parametrize(
    ("bug", "proof"),
    # the stale first beat needs a packet's three flits, past the proof's 2-step base case: its
    # induction step fails (UNKNOWN), and `zfabric prove` falls back to bmc, which fails
    [(ForgetsFirstData, "UNKNOWN"), (StripsOneTooFew, "FAIL")],
)
def test_head_flit_bugs_caught(sby, bug, proof):
    harness = EndpointHarness(
        ejection_vcs=1, head_flits=3, tag_width=3, check="presentation", unit_class=bug
    )
    assert sby(harness, "bmc", 8).status == "FAIL"
    harness = EndpointHarness(
        ejection_vcs=1, head_flits=3, check="presentation", state=True, unit_class=bug
    )
    assert sby(harness, "prove", 2).status == proof
