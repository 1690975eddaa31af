"""Endpoint injection side: credits and the flits on the link proven unbounded, covers reached
and a planted bug caught (hdl/formal/injection.py states the properties)."""

from __future__ import annotations

import pytest
from zfabric.hdl.endpoint import Endpoint
from zfabric.hdl.formal.injection import InjectionHarness
from zfabric.hdl.formal.state import opened


class NeverSpends(Endpoint):
    """Planted bug: injection VC 0 never spends a credit, so it sends into a full buffer."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        credit = signals["credit0_0"]
        fragment.add_statements("sync", credit.eq(credit + self.inject[0].credit[0]))
        return fragment


@pytest.mark.parametrize(("injection_vcs", "buffer_depth"), [(1, 4), (2, 4), (2, 3)])
def test_injection_proven(sby, injection_vcs, buffer_depth):
    harness = InjectionHarness(injection_vcs=injection_vcs, buffer_depth=buffer_depth, state=True)
    result = sby(harness, "prove", 2)
    assert result.status == "PASS", result.log


def test_injection_bounded(sby):
    # on the ports alone: two fills of a 4-flit buffer and more
    result = sby(InjectionHarness(), "bmc", 12)
    assert result.status == "PASS", result.log


def test_covers_reached(sby):
    result = sby(InjectionHarness(), "cover", 10)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 + 1


def test_credit_never_spent_caught(sby):
    assert sby(InjectionHarness(unit_class=NeverSpends), "bmc", 10).status == "FAIL"
    assert sby(InjectionHarness(unit_class=NeverSpends, state=True), "prove", 2).status == "FAIL"
