"""Run a model past saturation, then let it drain: the shared loop of the tests that check
credits are conserved, no deadlock is seen and every packet arrives once the sources stop."""

from __future__ import annotations

from zfabric.sim.model import DeadlockWatch, FabricModel
from zfabric.sim.traffic import Traffic


def offer_then_drain(
    model: FabricModel, traffic: Traffic, cycles: int, limit: int
) -> tuple[list, bool]:
    """Offer ``traffic`` for ``cycles``, then stop offering and step until every packet is
    delivered (by cycle ``limit``, asserted), credits checked every cycle: the packets offered,
    and whether the deadlock watch saw a deadlock (the run stops at once if it did)."""
    watch = DeadlockWatch(model)
    offered = []
    for cycle in range(cycles):
        offered += [model.offer(s, d, n) for s, d, n in traffic.packets_at(cycle)]
        model.step()
        model.check_credits()
        if watch() is not None:
            return offered, True
    while any(p.delivered is None for p in offered):
        model.step()
        model.check_credits()
        if watch() is not None:
            return offered, True
        assert model.cycle < limit, "the fabric must drain"
    return offered, False
