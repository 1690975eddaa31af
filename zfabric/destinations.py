"""Walks done destination by destination, split between processes.

The routing proof and each traffic pattern's limits walk one route graph per destination:
about N^2 routing states, minutes of pure Python at a thousand endpoints. The destinations are
independent, so a big plan's are walked in groups of :data:`GROUP` by a pool of processes,
each holding the plan, and the groups' results are merged in destination order. The groups
do not depend on the number of processes, so neither does any result, to the last bit of a
float sum. Each group is walked with the cyclic garbage collector off (:func:`collector_paused`).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from .plan import FabricPlan, PlanView
from .routing import RoutingFunction, make_routing

__all__ = [
    "GROUP",
    "PARALLEL_FROM",
    "collector_paused",
    "groups",
    "map_groups",
    "routing_of",
    "setup_workers",
]

#: destinations per task
GROUP = 32
#: endpoints from which the walks use every core (below, starting processes costs more)
PARALLEL_FROM = 256

Item = TypeVar("Item")
Result = TypeVar("Result")

#: the plan a pool's process walks (set by :func:`_hold`)
_PLAN: FabricPlan | None = None
#: the last plan :func:`routing_of` was asked for, its view and routing function
_ROUTING: tuple[FabricPlan, PlanView, RoutingFunction] | None = None


def setup_workers(endpoints: int) -> int:
    """The processes a walk over ``endpoints`` destinations uses: the cores this process may
    run on from :data:`PARALLEL_FROM` endpoints (``$ZFABRIC_SETUP_WORKERS`` overrides), else 1."""
    override = os.environ.get("ZFABRIC_SETUP_WORKERS")
    if override and override.isdigit() and int(override) > 0:
        return int(override)
    return len(os.sched_getaffinity(0)) if endpoints >= PARALLEL_FROM else 1


def groups(items: Iterable[Item]) -> Iterator[list[Item]]:
    """``items`` in consecutive groups of :data:`GROUP`, taken as they come."""
    iterator = iter(items)
    while group := list(itertools.islice(iterator, GROUP)):
        yield group


def routing_of(plan: FabricPlan) -> tuple[PlanView, RoutingFunction]:
    """The view and routing function of ``plan``, made once per plan for its groups."""
    global _ROUTING
    if _ROUTING is None or _ROUTING[0] is not plan:
        view = PlanView(plan)
        _ROUTING = (plan, view, make_routing(view))
    return _ROUTING[1], _ROUTING[2]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside (back on after, if it was on): a walk makes
    millions of small tuples, sets and frozensets and no reference cycle, and every collection
    it would set off scans the plan's objects again (on the torus 32x32, tens of thousands:
    about a fifth of the proof's CPU time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _hold(plan: FabricPlan) -> None:
    global _PLAN
    _PLAN = plan


def _call(work: Callable[[FabricPlan, Any], Any], group: Any) -> Any:
    assert _PLAN is not None
    with collector_paused():
        return work(_PLAN, group)


def map_groups(
    work: Callable[[FabricPlan, list[Item]], Result],
    plan: FabricPlan,
    items: Iterable[Item],
    *,
    workers: int,
) -> Iterator[tuple[int, Result]]:
    """``(items done, work(plan, group))`` for each group of ``items``, in order, the items
    taken as they come (a few groups ahead of the results); with ``workers`` > 1 in a pool of
    that many processes forked from this one, when it runs no other thread (a fork copies
    only the calling thread, and a lock another thread held would stay locked in the copy;
    a spawned process instead re-runs the caller's main script, which a script without a
    ``__main__`` guard does not survive). ``work`` must be a module-level function."""
    parts = groups(items)
    done = 0
    if workers <= 1 or threading.active_count() > 1:
        for part in parts:
            done += len(part)
            with collector_paused():
                result = work(plan, part)
            yield done, result
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_hold, initargs=(plan,)
    ) as pool:
        pending: collections.deque[tuple[int, Future]] = collections.deque()
        try:
            for part in itertools.chain(parts, [None]):
                if part is not None:
                    pending.append((len(part), pool.submit(_call, work, part)))
                while pending and (part is None or len(pending) > 2 * workers):
                    size, future = pending.popleft()
                    done += size
                    yield done, future.result()
        finally:  # an error, or a caller that stops early: the rest is not wanted
            for _, future in pending:
                future.cancel()
