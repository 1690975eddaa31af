"""Behavioural cycle-level reference model (pure Python; reads a FabricPlan)."""

from .fabric_model import FabricModel, InvariantError, ModelDeadlock, Packet

__all__ = ["FabricModel", "InvariantError", "ModelDeadlock", "Packet"]
