"""Routing functions, registered by name; importing this package registers all of them."""

from . import dor, dort, flat, sliced, source_destination, updown  # noqa: F401  (registration)
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
