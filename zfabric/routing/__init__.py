"""Routing functions, registered by name; importing this package registers all of them."""

from . import dor, dort, sliced, updown  # noqa: F401  (registration side effect)
from .base import (
    ROUTINGS,
    Decision,
    Hop,
    Injection,
    RoutingFunction,
    make_routing,
    routing,
    routing_head_width,
)

__all__ = [
    "ROUTINGS",
    "Decision",
    "Hop",
    "Injection",
    "RoutingFunction",
    "make_routing",
    "routing",
    "routing_head_width",
]
