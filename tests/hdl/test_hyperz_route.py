# amaranth: UnusedElaboratable=no
"""HyperZ's route units against the routing function, exhaustively: every (switch, input port,
input VC, destination), on small fabrics with every switch kind (HyperX; two-level Z-nodes with
up, down and side ports; three dimensions; q = 2 lanes; three processors per switch and s = 3,
whose digits are not bit fields). The comparator unit (hdl/router/route/hyperz.py) by
default, the generic table unit with ``arithmetic=False``."""

from __future__ import annotations

import pytest
from test_route import check_every_destination, expected, rtl_routes
from zfabric.hdl.router.route import RouteRows, SwitchPorts

from zfabric import compile_plan, load_spec
from zfabric.plan import PlanView
from zfabric.routing import make_routing

#: the default run's fabrics (a second or two each); the three-dimensional and three-level ones
#: (10-20 s each under the adaptive routings) under ``-m matrix``
FABRICS = {
    "hyperx-3x2": {"kind": "hyperx", "s": [3, 2], "terminals": 1},
    "hyperz-2x2-h2": {"kind": "hyperz", "s": [2, 2], "z": [2, 2], "R": [1, 2]},
    "hyperz-3-h2-q2": {"kind": "hyperz", "s": [3], "z": [3, 2], "R": [1, 2], "q": [2]},
    "hyperz-2x2x2-h2": {"kind": "hyperz", "s": [2, 2, 2], "z": [2, 2], "R": [1, 2]},
    "hyperz-2x3-h3": {"kind": "hyperz", "s": [2, 3], "z": [2, 2, 2], "R": [1, 2, 2]},
}
ROUTINGS = ["aliod", "cliod", "odim", "deter"]
BIG = {"hyperz-2x2x2-h2", "hyperz-2x3-h3"}
CASES = [
    pytest.param(name, routing, marks=[pytest.mark.matrix, pytest.mark.slow] if name in BIG else [])
    for name in sorted(FABRICS)
    for routing in ROUTINGS
]


def plan_of(name: str, routing):
    return compile_plan(load_spec({"name": name, "topology": FABRICS[name], "routing": routing}))


@pytest.mark.parametrize("name, routing", CASES)
def test_comparator_route_units_agree_with_the_routing_function(name, routing):
    plan = plan_of(name, routing)
    assert RouteRows(plan).kind == "hyperz"
    # adaptive routings under round-robin selection: candidate sets (a mask has no order)
    check_every_destination(plan, arithmetic=True, ordered=routing in ("odim", "deter"))


@pytest.mark.parametrize("routing", ["aliod", "deter"])
def test_table_route_units_agree_with_the_routing_function(routing):
    plan = plan_of("hyperz-2x2-h2", routing)
    assert RouteRows(plan, arithmetic=False).kind == "table"
    check_every_destination(plan, arithmetic=False, ordered=routing in ("odim", "deter"))


def test_heads_past_the_last_endpoint_get_no_route():
    """HyperX 3x2 has 6 endpoints under a 3-bit head: heads 6 and 7 name none. The routing
    function has no route for them (the route proof's reference, hdl/formal/route.py), and
    every unit of every switch offers nothing, as the table unit does."""
    plan = plan_of("hyperx-3x2", "aliod")
    view = PlanView(plan)
    routing = make_routing(view)
    assert RouteRows(plan).head_width == 3
    for switch in range(len(plan.switches)):
        ports = SwitchPorts.from_plan(view, switch)
        queries = {(p, v): [6, 7] for p in range(ports.n_ports) for v in range(ports.vcs[p])}
        answers = rtl_routes(plan, switch, queries)
        assert len(answers) == 2 * ports.n_out_vcs
        for (p, v, head), (candidates, _) in answers.items():
            assert candidates == expected(routing, switch, p, v, head)[0] == [], (switch, p, v)
