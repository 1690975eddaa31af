"""InputUnit behind a credit-obeying sender: counts and order proven unbounded (order also
bounded without the state invariants), and planted bugs caught (hdl/formal/input_unit.py
states the properties)."""

from __future__ import annotations

import pytest
from amaranth.hdl import Mux, Signal
from zfabric.hdl.formal.input_unit import InputUnitHarness
from zfabric.hdl.router import input_unit
from zfabric.hdl.router.input_unit import InputUnit


class CreditWithoutPop(InputUnit):
    """Planted bug: VC 0 returns a credit every cycle its front is valid, popped or not."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.sync += self.link.credit[0].eq(self.o[0].valid)
        return m


class CreditTwice(InputUnit):
    """Planted bug (issue 13's "a credit returned twice"): VC 0 puts each pop's credit pulse on
    the link for two cycles."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        popped, again = self.o[0].valid & self.o[0].ready, Signal()
        m.d.sync += [again.eq(popped), self.link.credit[0].eq(popped | again)]
        return m


class ShortRing(input_unit.FrontFIFO):
    """Planted bug (issue 13's "a FIFO write without space"): the pointers wrap one entry early,
    so the ring has B - 1 slots for B credits and the B-th flit is written over the oldest."""

    def _next(self, pointer):
        return Mux(pointer == self._depth - 2, 0, pointer + 1)


def test_counts_proven(sby):
    result = sby(InputUnitHarness(), "prove", 4)
    assert result.status == "PASS", result.log


def test_order_bounded(sby):
    result = sby(InputUnitHarness(order=True), "bmc", 10)
    assert result.status == "PASS", result.log


def test_covers_reached(sby):
    # per VC: full; popped while full; the (B+1)th flit popped (past a pointer wrap)
    result = sby(InputUnitHarness(order=True), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 * 3


def test_credit_without_pop_caught(sby):
    result = sby(InputUnitHarness(unit_class=CreditWithoutPop), "prove", 4)
    assert result.status == "FAIL", result.log
    assert "failed assertion" in result.log


def test_order_proven(sby):
    # the pointers and RAM contents strengthen order into an inductive property
    for n_vcs, depth in ((2, 4), (2, 3)):
        result = sby(
            InputUnitHarness(n_vcs=n_vcs, buffer_depth=depth, order=True, state=True), "prove", 2
        )
        assert result.status == "PASS", result.log


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
