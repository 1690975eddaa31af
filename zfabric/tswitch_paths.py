"""Path analysis of a T-switch fat tree: the connections each T-switch carries, counted by
walking the plan's own routes (the paper's Table 2 and Prop 20 are the tests' expectations).

Every ordered pair of distinct endpoints is one path (uniform traffic, the paper's §5.1). A path
passes through a T-switch entering on one of its 2k ports and leaving on another; the pair of
T-switch ports classifies it (Defs 3-5, §4.3): *forward* (down port to up port, C_f),
*turnaround* (down to down, T) or *backward* (up to down, C_b). It *crosses* if it takes an
internal link between entering and leaving (the internal-link use C_I of §5.3).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .plan import FabricPlan, PlanView
from .routing import make_routing
from .topologies.tswitch import tswitch_port

__all__ = ["TSwitchFlows", "TSwitchPaths", "tswitch_paths", "PATHS_ENDPOINT_LIMIT"]

#: ``check`` counts the paths of fabrics up to this many endpoints (the count grows with the
#: square of the endpoints: about 45 s at 1024 on one core)
PATHS_ENDPOINT_LIMIT = 1024

KINDS = ("forward", "turnaround", "backward")


@dataclass
class TSwitchFlows:
    """The paths through one T-switch, by (entry port, exit port) in T-switch numbering."""

    name: str
    stage: int  # level - 1, the paper's s
    k: int
    flows: Counter = field(default_factory=Counter)
    crossings: Counter = field(default_factory=Counter)

    def kind(self, entry: int, exit_: int) -> str:
        if entry >= self.k:
            return "backward"
        return "forward" if exit_ >= self.k else "turnaround"

    def total(self, counts: Counter, kind: str) -> int:
        return sum(c for (a, b), c in counts.items() if self.kind(a, b) == kind)

    def summary(self) -> dict[str, int]:
        """C_f, T, C_b and the crossings, in all and per kind."""
        out = {
            "C_f": self.total(self.flows, "forward"),
            "T": self.total(self.flows, "turnaround"),
            "C_b": self.total(self.flows, "backward"),
        }
        for kind in KINDS:
            out[f"crossings_{kind}"] = self.total(self.crossings, kind)
        out["crossings"] = sum(self.crossings.values())
        return out


@dataclass
class TSwitchPaths:
    """Every T-switch's paths, stage by stage."""

    k: int
    n: int
    pairs: int
    switches: list[TSwitchFlows]

    def stage(self, stage: int) -> list[TSwitchFlows]:
        return [s for s in self.switches if s.stage == stage]

    def report(self) -> dict[str, Any]:
        """The ``check --json`` object: per stage the per-switch range and the total of each
        count, and every T-switch's counts."""
        stages = []
        for stage in range(self.n):
            rows = [s.summary() for s in self.stage(stage)]
            stages.append(
                {
                    "stage": stage,
                    "switches": len(rows),
                    **{
                        key: {
                            "min": min(r[key] for r in rows),
                            "max": max(r[key] for r in rows),
                            "total": sum(r[key] for r in rows),
                        }
                        for key in rows[0]
                    },
                }
            )
        return {
            "k": self.k,
            "n": self.n,
            "pairs": self.pairs,
            "stages": stages,
            "switches": [{"name": s.name, "stage": s.stage, **s.summary()} for s in self.switches],
        }


def tswitch_paths(plan: FabricPlan) -> TSwitchPaths:
    """Count every path of ``plan`` (a T-switch tree under DESTRO) through every T-switch.

    Per destination the routes form a tree toward it, so the walk visits each (switch, input
    port) once per destination and adds up how many sources reach it.
    """
    view = PlanView(plan)
    rf = make_routing(view)
    k = plan.topology_params["z"][0]
    n = len(plan.topology_params["z"])
    switches = view.switches
    tswitch_of: list[int] = []  # internal switch -> T-switch index
    found: dict[tuple, int] = {}
    flows: list[TSwitchFlows] = []
    for switch in switches:
        where = switch.position
        key = (where["level"], where["zone"], where["index"])
        if key not in found:
            found[key] = len(flows)
            name = switch.name[:-1] if "half" in where else switch.name
            flows.append(TSwitchFlows(name, where["level"] - 1, k))
        tswitch_of.append(found[key])
    roles = [[p.role for p in s.ports] for s in switches]
    tport = [
        [tswitch_port(p, k) if p.role != "internal" else -1 for p in s.ports] for s in switches
    ]

    out_link = view.out_link

    def step(switch: int, port: int, head: Any) -> tuple:
        """From entering ``switch`` on ``port``: (T-switch exit port, crossed, next entry
        (switch, port) or None, next head)."""
        decision = rf.route(switch, port, 0, head)
        hop = decision.hops[0]
        link = out_link[switch][hop.port]
        crossed = link is not None and roles[switch][hop.port] == "internal"
        if crossed:
            switch, head = link.dst.switch, decision.head
            decision = rf.route(switch, link.dst.port, hop.vcs[0], head)
            hop = decision.hops[0]
            link = out_link[switch][hop.port]
        nxt = (link.dst.switch, link.dst.port) if link is not None else None
        return tport[switch][hop.port], crossed, nxt, decision.head

    for dst in range(len(plan.endpoints)):
        # entry state (switch, in port) -> step; the routing decides by its state key
        steps: dict[tuple[int, int], tuple] = {}
        decided: dict[Any, tuple] = {}
        reached: dict[tuple[int, int], int] = {}
        frontier = []
        for src in range(len(plan.endpoints)):
            if src != dst:
                injection = rf.injections(src, dst)[0]
                state = (injection.switch, injection.port)
                reached[state] = reached.get(state, 0) + 1
                frontier.append((state, injection.head))
        while frontier:  # every entry state toward dst, each once
            state, head = frontier.pop()
            if state in steps:
                continue
            key = rf.state_key(*state, 0, head)
            if key not in decided:
                decided[key] = step(*state, head)
            steps[state] = decided[key]
            nxt = steps[state][2]
            if nxt is not None:
                frontier.append((nxt, steps[state][3]))
        # add the sources up along the tree toward dst: a state's flows all pass on to its
        # successor, so states are taken farthest from dst first
        depth: dict[tuple[int, int], int] = {}
        for state in steps:
            chain = []
            while state is not None and state not in depth:
                chain.append(state)
                state = steps[state][2]
            d = -1 if state is None else depth[state]
            for earlier in reversed(chain):
                d += 1
                depth[earlier] = d
        for state in sorted(steps, key=depth.__getitem__, reverse=True):
            exit_port, crossed, nxt, _ = steps[state]
            count = reached.get(state, 0)
            switch, port = state
            record = flows[tswitch_of[switch]]
            pair = (tport[switch][port], exit_port)
            record.flows[pair] += count
            if crossed:
                record.crossings[pair] += count
            if nxt is not None:
                reached[nxt] = reached.get(nxt, 0) + count
    pairs = len(plan.endpoints) * (len(plan.endpoints) - 1)
    return TSwitchPaths(k, n, pairs, flows)
