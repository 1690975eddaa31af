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


class SkipsHeadFlits(Endpoint):
    """Planted bug: the endpoint forgets the head flits it still owes after a first flit, so
    the packet's second beat follows the first flit at once."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        fragment.add_statements("sync", signals["head_flits_left"].eq(0))  # the last one wins
        return fragment


class CountAsPulse(Endpoint):
    """Planted bug: the injection link's credits are read as a pulse (one bit), so a count of
    two credits returned in one cycle (a head and its surplus head flit) is lost."""

    def __init__(self, **kwargs):
        super().__init__(**{**kwargs, "credit_width": 1})


@pytest.mark.parametrize(
    ("injection_vcs", "head_flits", "varying"),
    # fixed counts (flat, source_destination, torus heads) and per-packet ones up to 3 (sliced)
    [(1, 2, False), (2, 3, False), (2, 4, False), (2, 3, True)],
)
def test_head_flits_proven(sby, injection_vcs, head_flits, varying):
    harness = InjectionHarness(
        injection_vcs=injection_vcs,
        head_flits=head_flits,
        varying=varying,
        credit_width=head_flits.bit_length() if varying else 1,
        state=True,
    )
    result = sby(harness, "prove", 2)
    assert result.status == "PASS", result.log


def test_head_flit_covers_reached(sby):
    # each buffer full, a tail on the last VC, and a one-beat packet ended by its head flit
    result = sby(InjectionHarness(head_flits=3), "cover", 12)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 2 + 1 + 1


def test_skipped_head_flits_caught(sby):
    assert sby(InjectionHarness(head_flits=3, unit_class=SkipsHeadFlits), "bmc", 6).status == "FAIL"
    harness = InjectionHarness(head_flits=3, state=True, unit_class=SkipsHeadFlits)
    assert sby(harness, "prove", 2).status == "FAIL"


def test_count_read_as_pulse_caught(sby):
    harness = InjectionHarness(
        head_flits=3, varying=True, credit_width=2, state=True, unit_class=CountAsPulse
    )
    # two flits held and popped together takes more cycles than the proof's base case: the
    # induction step fails (UNKNOWN) and bounded checking finds the lost credit
    assert sby(harness, "prove", 2).status in ("FAIL", "UNKNOWN")
    assert sby(harness, "bmc", 6).status == "FAIL"
