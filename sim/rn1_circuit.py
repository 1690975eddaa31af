"""The RN1's own flow control on a built Transit plan: bufferless circuit set-up, drop and retry.

A. DeHon, "Fat-Tree Routing for Transit", MIT AI Lab, 1990, §1.3 and §3.6.2. This is not the
wormhole switch of docs/microarchitecture.md (the one zfabric builds): an RN1 buffers nothing.
A set-up advances one chip a cycle (and ``wire_delay`` k more cycles a link); at each chip it
takes a free output of its direction, at random when both of a dilated chip's are free, and
holds it for the whole transmission; when every output of its direction is taken the data is
ignored (the set-up is *dropped*) and the outputs it already holds stay taken until the
transmission ends. At its end the connection status goes back to the source over the circuit
(a turn-around of 2(k + 1) cycles, then back along the chips it holds), which retries a
dropped message with fresh random choices (another injection input and other outputs).

Two measurements:

- :meth:`CircuitNetwork.one_round`: the thesis's unqueued measure (§4.5, after Knight's
  probabilistic model): every processor opens a connection at once with probability ``load``
  (1: a fully loaded network, each processor on one of its two inputs), nothing is released
  during the round, and every set-up advances one chip a step (a wire delay common to every
  link changes no order); the fraction that reaches its destination is P_route, and over a locality
  model's destinations P_norm = sum P_any(n) P_route(n) (Eq 4.43).
- :meth:`CircuitNetwork.run`: the same machine in time: an idle processor starts a message of
  ``message_cycles`` cycles with probability ``load`` each cycle; a circuit, reached or
  dropped, holds its outputs until the source learns its status (the transmission, the
  turn-around and the way back); a dropped message is retried at once.

Randomness (destinations, inputs, outputs, the order of set-ups arriving at one cycle) comes
from one seeded generator: a run is reproducible.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from zfabric.plan import FabricPlan, PlanView
from zfabric.routing import make_routing

__all__ = ["CircuitNetwork", "RoundResult", "RunResult"]

Output = tuple[int, int]  # (switch, output port)


@dataclass
class RoundResult:
    """Per level (the traffic's level of the pair): connections tried and reached."""

    tried: dict[int, int] = field(default_factory=dict)
    reached: dict[int, int] = field(default_factory=dict)

    def add(self, level: int, ok: bool) -> None:
        self.tried[level] = self.tried.get(level, 0) + 1
        self.reached[level] = self.reached.get(level, 0) + ok

    @property
    def probability(self) -> float:
        """Reached over tried, all levels together (P_norm under the traffic's levels)."""
        tried = sum(self.tried.values())
        return sum(self.reached.values()) / tried if tried else float("nan")

    def by_level(self) -> dict[int, float]:
        return {level: self.reached[level] / self.tried[level] for level in sorted(self.tried)}


@dataclass
class RunResult:
    """A timed run: set-ups tried and reached (per level), messages delivered, and the mean
    tries a delivered message took."""

    attempts: RoundResult
    delivered: int
    tries_per_message: float
    cycles: int


class CircuitNetwork:
    """Circuit set-up through the chips of a built Transit plan (its ``transit`` routing)."""

    def __init__(self, plan: FabricPlan, *, seed: int = 1, wire_delay: int = 0):
        if plan.topology != "transit":
            raise ValueError(f"RN1 circuits run on a Transit plan, not {plan.topology}")
        if wire_delay < 0:
            raise ValueError(f"wire_delay must be >= 0, got {wire_delay}")
        self.plan = plan
        self.view = PlanView(plan)
        self.routing = make_routing(self.view)
        self.rng = random.Random(seed)
        self.wire_delay = wire_delay
        #: routing state -> (per candidate output: (switch, port, next switch, next port), or
        #: the next switch None where the output delivers; the head after this chip)
        self._steps: dict[Hashable, tuple[tuple[tuple[int, int, int | None, int], ...], object]]
        self._steps = {}

    # ---- one chip --------------------------------------------------------------------------

    def _step(self, switch: int, port: int, head) -> tuple[tuple, object]:
        key = self.routing.state_key(switch, port, 0, head)
        if key not in self._steps:
            decision = self.routing.route(switch, port, 0, head)
            candidates = []
            for hop in decision.hops:
                link = self.view.out_link[switch][hop.port]
                if link is None:
                    candidates.append((switch, hop.port, None, 0))
                else:
                    candidates.append((switch, hop.port, link.dst.switch, link.dst.port))
            self._steps[key] = (tuple(candidates), decision.head)
        return self._steps[key]

    def _start(self, src: int, dst: int) -> tuple[int, int, object]:
        """A fresh try's first chip: one of the processor's two inputs, at random."""
        injection = self.rng.choice(self.routing.injections(src, dst))
        return injection.switch, injection.port, injection.head

    def _advance(
        self, state: tuple[int, int, object], held: set[Output] | dict[Output, int]
    ) -> tuple[str, Output | None, tuple[int, int, object] | None]:
        """One chip of a set-up against the outputs ``held``: ``('reached', output, None)``,
        ``('dropped', None, None)`` or ``('on', output, next state)``; the caller marks the
        output taken."""
        switch, port, head = state
        candidates, head = self._step(switch, port, head)
        free = [c for c in candidates if (c[0], c[1]) not in held]
        if not free:
            return "dropped", None, None
        chosen = free[0] if len(free) == 1 else self.rng.choice(free)
        output = (chosen[0], chosen[1])
        if chosen[2] is None:
            return "reached", output, None
        return "on", output, (chosen[2], chosen[3], head)

    # ---- the thesis's unqueued measure ------------------------------------------------------

    def one_round(
        self,
        load: float,
        destination: Callable[[int], int | None],
        level: Callable[[int, int], int],
    ) -> RoundResult:
        """Every processor opens a connection with probability ``load`` at cycle 0 (to
        ``destination(src)``); set-ups advance together, those arriving at one cycle in random
        order, and nothing is released. Per ``level(src, dst)``: tried and reached."""
        if not 0 < load <= 1:
            raise ValueError(f"load must be in (0, 1], got {load}")
        result = RoundResult()
        tries = []
        for src in range(len(self.plan.endpoints)):
            if self.rng.random() < load:
                dst = destination(src)
                if dst is not None:
                    tries.append((src, dst, self._start(src, dst)))
        held: set[Output] = set()
        active = [(src, dst, state) for src, dst, state in tries]
        while active:
            self.rng.shuffle(active)
            moving = []
            for src, dst, state in active:
                verdict, output, after = self._advance(state, held)
                if output is not None:
                    held.add(output)
                if verdict == "on":
                    moving.append((src, dst, after))
                else:
                    result.add(level(src, dst), verdict == "reached")
            active = moving
        return result

    # ---- in time, with retries ---------------------------------------------------------------

    def run(
        self,
        load: float,
        destination: Callable[[int], int | None],
        level: Callable[[int, int], int],
        *,
        message_cycles: int = 16,
        warmup: int = 500,
        cycles: int = 2000,
    ) -> RunResult:
        """Messages of ``message_cycles`` cycles, started by each idle processor with
        probability ``load`` a cycle, retried until delivered; tries and deliveries counted
        for those started in the window [warmup, warmup + cycles)."""
        if not 0 < load <= 1:
            raise ValueError(f"load must be in (0, 1], got {load}")
        if message_cycles < 1 or warmup < 0 or cycles < 1:
            raise ValueError("message_cycles and cycles must be >= 1, warmup >= 0")
        n = len(self.plan.endpoints)
        hop = 1 + self.wire_delay
        turnaround = 2 * (self.wire_delay + 1)
        held: dict[Output, int] = {}  # output -> the try holding it
        releases: list[tuple[int, int, int]] = []  # (cycle, sequence, try): heap
        tries: dict[int, dict] = {}  # try -> its message, outputs, state
        busy = [False] * n
        attempts = RoundResult()
        delivered = tries_total = 0
        arrivals: dict[int, list[int]] = {}  # cycle -> tries whose head reaches a chip then
        sequence = 0
        end = warmup + cycles
        for now in range(end):
            # circuits whose status reached their source: free their outputs, retry or finish
            while releases and releases[0][0] <= now:
                _, _, t = heapq.heappop(releases)
                attempt = tries.pop(t)
                for output in attempt["outputs"]:
                    del held[output]
                message = attempt["message"]
                if attempt["reached"]:
                    busy[message["src"]] = False
                    if message["counted"]:
                        delivered += 1
                        tries_total += message["tries"]
                else:
                    sequence = self._try(message, now, tries, arrivals, sequence)
            for src in range(n):
                if not busy[src] and self.rng.random() < load:
                    dst = destination(src)
                    if dst is None:
                        continue
                    busy[src] = True
                    message = {"src": src, "dst": dst, "tries": 0, "counted": now >= warmup}
                    sequence = self._try(message, now, tries, arrivals, sequence)
            moving = arrivals.pop(now, [])
            self.rng.shuffle(moving)
            for t in moving:
                attempt = tries[t]
                verdict, output, after = self._advance(attempt["state"], held)
                if output is not None:
                    held[output] = t
                    attempt["outputs"].append(output)
                if verdict == "on":
                    attempt["state"] = after
                    arrivals.setdefault(now + hop, []).append(t)
                    continue
                reached = verdict == "reached"
                attempt["reached"] = reached
                message = attempt["message"]
                if message["counted"]:
                    attempts.add(level(message["src"], message["dst"]), reached)
                chips = len(attempt["outputs"]) + (not reached)
                status = now + message_cycles + turnaround + chips * hop
                heapq.heappush(releases, (status, t, t))
        return RunResult(
            attempts=attempts,
            delivered=delivered,
            tries_per_message=tries_total / delivered if delivered else float("nan"),
            cycles=cycles,
        )

    def _try(self, message: dict, now: int, tries: dict, arrivals: dict, sequence: int) -> int:
        """Start a try of ``message`` at ``now`` (its first chip this cycle)."""
        message["tries"] += 1
        tries[sequence] = {
            "message": message,
            "outputs": [],
            "state": self._start(message["src"], message["dst"]),
            "reached": False,
        }
        arrivals.setdefault(now, []).append(sequence)
        return sequence + 1
