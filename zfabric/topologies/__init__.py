"""Topologies, registered by name; importing this package registers all of them."""

from . import hyperz, ndt, torus, transit, znode  # noqa: F401  (registration side effect)
from .base import TOPOLOGIES, Topology, build_fabric, compile_plan, topology

__all__ = ["TOPOLOGIES", "Topology", "build_fabric", "compile_plan", "topology"]
