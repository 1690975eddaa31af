# amaranth: UnusedElaboratable=no
"""HyperZ's routings in the generic table route unit (hdl/router/route/table.py), exhaustively:
every (switch, input port, input VC, destination) against the routing function, on small
fabrics with every switch kind (HyperX, and a two-level Z-node with up, down and side ports).
The sliced GHC-comparator unit of issue 17 item 4 is not built yet: these are the tables."""

from __future__ import annotations

import pytest
from test_route import check_every_destination
from zfabric.hdl.router.route import RouteRows

from zfabric import compile_plan, load_spec

FABRICS = {
    "hyperx-3x2": {"kind": "hyperx", "s": [3, 2], "terminals": 1},
    "hyperz-2x2-h2": {"kind": "hyperz", "s": [2, 2], "z": [2, 2], "R": [1, 2]},
}


@pytest.mark.parametrize("routing", ["aliod", "cliod", "odim", "deter"])
@pytest.mark.parametrize("name", sorted(FABRICS))
def test_table_route_units_agree_with_the_routing_function(name, routing):
    plan = compile_plan(load_spec({"name": name, "topology": FABRICS[name], "routing": routing}))
    assert RouteRows(plan).kind == "table"
    # adaptive routings under round-robin selection: candidate sets (a mask has no order)
    check_every_destination(plan, arithmetic=True, ordered=routing in ("odim", "deter"))
