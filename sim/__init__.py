"""sim: the cycle-level models (the readable reference, ``model``, and the compiled ``fast``
engine) and what runs and reads them: traffic, measurement, sweeps, studies, analytic models,
and the cocotb co-simulation of the RTL (``tb``). It reads a FabricPlan, never a graph."""

#: the cycle engines, the default first: ``fast`` (:mod:`zfabric.sim.fast`, compiled) and
#: ``reference`` (:mod:`zfabric.sim.model`, the readable oracle); cycle for cycle the same
ENGINES = ("fast", "reference")
