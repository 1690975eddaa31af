"""sim: the cycle-level reference model of a fabric (``model``), traffic, measurement and
sweeps, analytic models, studies on Dask, and the cocotb co-simulation of the RTL (``tb``).
It reads a FabricPlan, never a graph."""
