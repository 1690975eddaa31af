"""Reusable cocotb 2.x components for checking a fabric's Verilog against the reference model.

- :mod:`zfabric.sim.tb.packing`: endpoint beats <-> integers, packet identity in the data words
- :mod:`zfabric.sim.tb.endpoint`: ``CycleLoop``, ``EndpointSource`` (driver), ``EndpointMonitor``
- :mod:`zfabric.sim.tb.scoreboard`: the model's expectations and the ``LockstepScoreboard``
- :mod:`zfabric.sim.tb.bench`: the generic cocotb bench (plan and trace from the environment)
- :mod:`zfabric.sim.tb.runner`: ``cosim(plan, trace, sim=...)``, builds cached by plan hash
"""
