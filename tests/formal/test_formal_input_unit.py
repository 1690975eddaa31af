"""InputUnit behind a credit-obeying sender: counts and order proven unbounded (order also
bounded without the state invariants), and planted bugs caught (hdl/formal/input_unit.py
states the properties)."""

from __future__ import annotations

import pytest
from amaranth.hdl import Mux, Signal
from zfabric.hdl.formal.input_unit import InputUnitHarness
from zfabric.hdl.formal.state import opened
from zfabric.hdl.router import input_unit
from zfabric.hdl.router.input_unit import InputUnit


class CreditWithoutPop(InputUnit):
    """Planted bug: VC 0 returns a credit every cycle its front is valid, popped or not."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.sync += self.link.credit[0].eq(self.o[0].valid)
        return m


class CreditTwice(InputUnit):
    """Planted bug ("a credit returned twice"): VC 0 puts each pop's credit pulse on
    the link for two cycles."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        popped, again = self.o[0].valid & self.o[0].ready, Signal()
        m.d.sync += [again.eq(popped), self.link.credit[0].eq(popped | again)]
        return m


class ShortRing(input_unit.FrontFIFO):
    """Planted bug ("a FIFO write without space"): the pointers wrap one entry early,
    so the ring has B - 1 slots for B credits and the B-th flit is written over the oldest."""

    def _next(self, pointer):
        return Mux(pointer == self._depth - 2, 0, pointer + 1)


class OneCreditPerPop(InputUnit):
    """Planted bug: VC 0 returns one credit per pop, forgetting the surplus head flits a pop
    with ``skip`` takes out with the head."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.sync += self.link.credit[0].eq(self.o[0].valid & self.o[0].ready)
        return m


class SkipIgnored(input_unit.FrontFIFO):
    """Planted bug: the pointers move one entry per pop whatever ``skip`` says, while the level
    drops by 1 + ``skip``: the surplus head flits stay at the front."""

    def _add(self, pointer, count):
        return pointer


class LastIsFront(input_unit.FrontFIFO):
    """Planted bug: ``last`` is the front's ctrl bits even when a pop takes entries behind it,
    so a head whose surplus head flits end the packet does not cross as a tail."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        if self._max_skip:
            m.d.comb += self.last.eq(self.r_data[: self._ctrl_width])
        return m


def test_counts_proven(sby):
    result = sby(InputUnitHarness(), "prove", 4)
    assert result.status == "PASS", result.log


@pytest.mark.formal  # proven unbounded by default (test_order_proven)
def test_order_bounded(sby):
    result = sby(InputUnitHarness(order=True), "bmc", 10)
    assert result.status == "PASS", result.log


def test_covers_reached(sby):
    # per VC: full; popped while full; the (B+1)th flit popped (past a pointer wrap)
    result = sby(InputUnitHarness(order=True), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 * 3


class SourceFromFront(InputUnit):
    """Planted bug: the picked flit's ``src`` is not its own (under the harness's tags, the
    one the flit behind it carries)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.picked.src.eq(~self.picked.payload[0])
        return m


def test_credit_without_pop_caught(sby):
    result = sby(InputUnitHarness(unit_class=CreditWithoutPop), "prove", 4)
    assert result.status == "FAIL", result.log
    assert "failed assertion" in result.log


@pytest.mark.parametrize("shared_data", [True, False])
def test_order_proven(sby, shared_data):
    # the pointers and RAM contents strengthen order into an inductive property, with the
    # VCs' data in one RAM or in a RAM per VC
    for n_vcs, depth in ((2, 4), (2, 3)):
        harness = InputUnitHarness(
            n_vcs=n_vcs, buffer_depth=depth, order=True, state=True, shared_data=shared_data
        )
        result = sby(harness, "prove", 2)
        assert result.status == "PASS", result.log


@pytest.mark.parametrize("shared_data", [True, False])
def test_wrong_source_caught(sby, shared_data):
    harness = InputUnitHarness(order=True, shared_data=shared_data, unit_class=SourceFromFront)
    result = sby(harness, "bmc", 6)
    assert result.status == "FAIL", result.log


def test_credit_twice_caught(sby):
    result = sby(InputUnitHarness(unit_class=CreditTwice), "prove", 4)
    assert result.status == "FAIL", result.log
    assert result.vcd is not None and result.vcd.is_file()


def test_short_ring_caught(sby, monkeypatch):
    monkeypatch.setattr(input_unit, "FrontFIFO", ShortRing)
    result = sby(InputUnitHarness(order=True), "bmc", 10)
    assert result.status == "FAIL", result.log
    # the unbounded proof does not pass either: its base case is shorter than the bug's
    # trace, so induction fails (UNKNOWN), and `zfabric prove` falls back to bmc, which fails
    result = sby(InputUnitHarness(order=True, state=True), "prove", 2)
    assert result.status == "UNKNOWN", result.log


@pytest.mark.formal
def test_order_bounded_deep(sby):
    # two fills and drains of the 4-entry buffer per VC, with 3-bit sequence numbers wrapping
    result = sby(InputUnitHarness(order=True, payload_width=3), "bmc", 14)
    assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    ("n_vcs", "depth", "max_skip", "shared_data"),
    [(2, 4, 2, True), (2, 3, 2, True), (1, 4, 3, True), (2, 4, 2, False)],
)
def test_multi_pop_proven(sby, n_vcs, depth, max_skip, shared_data):
    # a head and up to max_skip surplus head flits popped at once (sliced heads, head_bits),
    # with the VCs' data in one RAM (stages 1-3) or in a RAM per VC (stages 4-5)
    harness = InputUnitHarness(
        n_vcs=n_vcs, buffer_depth=depth, max_skip=max_skip, shared_data=shared_data
    )
    result = sby(harness, "prove", 4)
    assert result.status == "PASS", result.log
    harness = InputUnitHarness(
        n_vcs=n_vcs,
        buffer_depth=depth,
        max_skip=max_skip,
        shared_data=shared_data,
        order=True,
        state=True,
    )
    result = sby(harness, "prove", 2)
    assert result.status == "PASS", result.log


def test_multi_pop_covers_reached(sby):
    # per VC as above, and a pop of the head with max_skip surplus head flits
    result = sby(InputUnitHarness(order=True, max_skip=2), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 * 4


def test_one_credit_per_pop_caught(sby):
    result = sby(InputUnitHarness(max_skip=2, unit_class=OneCreditPerPop), "prove", 4)
    assert result.status == "FAIL", result.log


@pytest.mark.parametrize("bug", [SkipIgnored, LastIsFront])
def test_multi_pop_fifo_bugs_caught(sby, monkeypatch, bug):
    monkeypatch.setattr(input_unit, "FrontFIFO", bug)
    result = sby(InputUnitHarness(max_skip=2, order=True), "bmc", 8)
    assert result.status == "FAIL", result.log


class EndsFromLink(InputUnit):
    """Planted bug: VC 0's count of packet ends drops on any pop, the popped flit a tail or
    not (store-and-forward would route a head before its tail is in)."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        ends = signals["ends0"]
        flit = self.link.flit
        written = flit.valid & (flit.payload.vc == 0) & flit.payload.kind.as_value()[1]
        popped = self.o[0].valid & self.o[0].ready
        fragment.add_statements("sync", ends.eq(ends + written - popped))
        return fragment


@pytest.mark.parametrize("shared_data", [True, False])
def test_packet_ends_proven(sby, shared_data):
    # store-and-forward: ``ends`` says whether the FIFO holds a tail (any flit may be one)
    for n_vcs, depth in ((2, 4), (1, 3)):
        harness = InputUnitHarness(
            n_vcs=n_vcs,
            buffer_depth=depth,
            order=True,
            state=True,
            shared_data=shared_data,
            count_ends=True,
        )
        result = sby(harness, "prove", 2)
        assert result.status == "PASS", result.log


def test_packet_ends_bug_caught(sby):
    harness = InputUnitHarness(order=True, count_ends=True, unit_class=EndsFromLink)
    result = sby(harness, "bmc", 8)
    assert result.status == "FAIL", result.log
