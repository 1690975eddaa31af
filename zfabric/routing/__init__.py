"""Routing functions, registered by name; importing this package registers all of them."""

from . import (  # noqa: F401  (registration)
    destro,
    dor,
    dort,
    dort_adaptive,
    duato,
    flat,
    hyperz,
    sliced,
    source_destination,
    transit,
    tsdor,
    updown,
    updown_table,
)
from .base import (
    ROUTINGS,
    Decision,
    Hop,
    Injection,
    RoutingFunction,
    fixed_head_flits,
    head_flits,
    make_routing,
    multi_flit_heads,
    require_route_unit,
    routing,
    routing_head_width,
)

__all__ = [
    "ROUTINGS",
    "Decision",
    "Hop",
    "Injection",
    "RoutingFunction",
    "fixed_head_flits",
    "head_flits",
    "multi_flit_heads",
    "make_routing",
    "require_route_unit",
    "routing",
    "routing_head_width",
]
