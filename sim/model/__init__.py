"""Behavioural cycle-level reference model (pure Python; reads a FabricPlan)."""

from .fabric_model import (
    DeadlockWatch,
    EjectStalls,
    FabricModel,
    InvariantError,
    ModelDeadlock,
    Packet,
)

__all__ = [
    "DeadlockWatch",
    "EjectStalls",
    "FabricModel",
    "InvariantError",
    "ModelDeadlock",
    "Packet",
]
