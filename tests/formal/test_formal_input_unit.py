"""InputUnit behind a credit-obeying sender: counts proven unbounded, order bounded, and
planted bugs caught (hdl/formal/input_unit.py states the properties)."""

from __future__ import annotations

import pytest
from amaranth.hdl import Mux
from zfabric.hdl.formal.input_unit import InputUnitHarness
from zfabric.hdl.router import input_unit
from zfabric.hdl.router.input_unit import InputUnit


class CreditWithoutPop(InputUnit):
    """Planted bug: VC 0 returns a credit every cycle its front is valid, popped or not."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.sync += self.link.credit[0].eq(self.o[0].valid)
        return m


class ShortRing(input_unit.FrontFIFO):
    """Planted bug: the pointers wrap one entry early, so a full FIFO overwrites its oldest."""

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


def test_short_ring_caught(sby, monkeypatch):
    monkeypatch.setattr(input_unit, "FrontFIFO", ShortRing)
    result = sby(InputUnitHarness(order=True), "bmc", 10)
    assert result.status == "FAIL", result.log


@pytest.mark.formal
def test_order_bounded_deep(sby):
    # two fills and drains of the 4-entry buffer per VC, with 3-bit sequence numbers wrapping
    result = sby(InputUnitHarness(order=True, payload_width=3), "bmc", 14)
    assert result.status == "PASS", result.log
