"""hdl: the Amaranth RTL of zfabric. It reads a FabricPlan, never a graph (DESIGN.md)."""
