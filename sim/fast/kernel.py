"""The compiled cycle of :class:`~zfabric.sim.fast.FastModel`: docs/microarchitecture.md on flat
integer arrays, one function per step of the contract, compiled by numba (and run as plain
Python with ``NUMBA_DISABLE_JIT=1``, for debugging).

Indices: a switch's ports are numbered globally (``gp``), each input VC (``iv``) and output VC
(``ov``) too; an endpoint attachment (``ga``) has ``N`` injection credits and ``E`` receive
buffers (``rb = ga * E + w``). Each index space has one table, a row per index and a column per
field (``st.iv[iv, ASSIGN]``), so the compiled functions take a handful of arrays, not a
hundred. A FIFO is a ring of ``B`` flit codes, ``slot << 16 | index``: the packet's row in
``st.pk`` and the flit's index in its packet. The wires hold two phases: what is sent in this
cycle, and what was sent in the previous one and lands at its end.

:func:`run` advances whole cycles until it must hand back to Python: a routing decision
missing from the table (looked up before the cycle starts, so nothing of the cycle is done
yet), a cycle the caller must see (``until``, a deadlock check, the watched packets all
delivered), a log that could fill, or a broken invariant.
"""

from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from zfabric.router_settings import LFSR_TAPS

#: how every function here is compiled: cached on disk, and without numba's runtime (its
#: reference counts): the cycle allocates nothing, and each table a function binds from ``st``
#: would otherwise cost an atomic count up and down (on the E6 Znode, 3/4 of a switch's step)
compiled = functools.partial(njit, cache=True, _nrt=False)

#: status codes :func:`run` returns
UNTIL, MISS, STUCK, WATCH, SETTLED, LOGS, INVARIANT = range(7)

#: invariant errors (``sc[ERROR]``, with ``sc[ERROR_AT]`` the index it names)
FIFO_OVER, RECEIVE_OVER, CREDIT_OVER, WRONG_ENDPOINT, OUT_OF_ORDER, SURPLUS = range(1, 7)

# ``cfg``: the settings, constant through a run
(
    DEPTH,
    INJ_VCS,
    EJ_VCS,
    ITERATIONS,
    ROUTE_STAGE,
    VC_STAGE,
    SPLIT,
    VC_SPLIT,
    SELECTION,
    LOW,
    PATHS,
    STALLS,
    WATCH_EVERY,
    CHECKS,
    N_IV,
    LISTS,
    WHOLE,
    STORES,
    BYPASS,
    CFG_SIZE,
) = range(20)

FIRST_FREE, ROUND_ROBIN, OCCUPANCY, RANDOM = range(4)

# ``sc``: the scalars that change
(
    CYCLE,
    QUIET,
    IN_NETWORK,
    DELIVERED,
    WATCHED,
    BUSY,
    PHASE,
    ERROR,
    ERROR_AT,
    N_MISS,
    N_DELIVERED_LOG,
    N_PATH_LOG,
    N_TAKING,
    N_SORTED,
    N_FREE,
    SC_SIZE,
) = range(16)

# ``sw``: per switch; WAKE: the last cycle it was put on the list of switches to step (0: never);
# RELEASES: how many times a tail crossing it has freed one of its output VCs
SW_PORT0, SW_NPORTS, SW_CNT, SW_WAKE, SW_RELEASES, SW_FIELDS = range(6)
# ``gp``: per port (input and output of one index), with its pointers and staged picks;
# STRAIGHT: under the straight bypass the output port (``gp``) its input feeds straight, -1 for
# none; ASKED: the last cycle a buffered flit of its switch requested its output (-1: never).
#
# The rows of ``gp``, ``iv`` and ``ov`` are 16 fields of 32 bits, one cache line each (the
# engine aligns the tables on 64 bytes, ``engine.ROW_TYPE``): on the E6 Znode the step's time
# goes to the cache lines the port-by-port scans touch, not to their arithmetic
(
    GP_IV0,
    GP_NIV,
    RR_IN,
    RR_OUT,
    RR_SEL,
    GP_RING,
    GP_OV0,
    GP_NOV,
    VA_IN,
    VA_OUT,
    STAGED_V,
    STAGED_OV,
    VSTAGED_V,
    VSTAGED_OV,
    GP_STRAIGHT,
    GP_ASKED,
) = range(16)
GP_FIELDS = 16
# ``iv``: per input VC: its FIFO ring, its output VC, its decision, this cycle's requests, the
# last cycle a flit left its FIFO (the straight bypass asks whether it was empty at the start),
# the last cycle it was put on the list of fronts to look up (``fronts``; 0: never); HELD: its
# switch's RELEASES when step 2 found its front head's candidates all held by other packets
# (-1: never). A head leaves only once a release let it ask again, and RELEASES only grows, so
# the mark of a head that left never matches again; past HELD_MAX, what the 32-bit field holds,
# a switch's RELEASES starts again from 0 with its input VCs' marks cleared
(
    REQ,
    VREQ,
    IV_CNT,
    ASSIGN,
    IV_HELD,
    IV_HEAD,
    DECISION,
    PENDING,
    IV_SW,
    IV_GP,
    IV_CREDIT_TO,
    IV_POPPED,
    IV_LISTED,
) = range(13)
IV_FIELDS = 16
#: the largest mark HELD holds: the rows' fields are 32 bits (``engine.ROW_TYPE``)
HELD_MAX = (1 << 31) - 1
# ``ov``: per output VC; DST is the downstream input VC, or -1 - rb for an ejection; ATOMIC:
# taken only when empty (an adaptive VC, RoutingFunction.atomic); RING: under bubble flow
# control the ring it sends on (1 + 2 x dimension + going +), 0 for none; ``gp``'s RING: the
# ring its input receives (0: none), so a head whose input's ring is not its output's enters it
(
    OWNER,
    CREDIT,
    OV_PORT,
    OV_ATOMIC,
    OV_RING,
    OV_LEVEL,
    OV_DST,
    OV_SW,
    OV_GP,
    OV_VC,
) = range(10)
OV_FIELDS = 16
# ``ep``: per endpoint: the packet being injected, the injection pointer, the source queue.
# ``ep_wait``: per endpoint, the first cycle it may send in, so injection passes over it before
# (a vector of its own: the scan of every endpoint reads it alone): the creation cycle of its
# queue's first packet, or NEVER while its queue is empty or its next flit found no injection
# credit (0 once one of its attachments gets one back: its credits are its own)
(
    EP_ATT0,
    EP_SLOT,
    EP_NEXT,
    EP_WHICH,
    EP_VC,
    EP_PTR,
    EP_QHEAD,
    EP_QTAIL,
    EP_FIELDS,
) = range(9)
NEVER = 1 << 62
# ``ga``: per endpoint attachment; its ejection side; LISTED: on the list of attachments holding
# flits (``taking``)
GA_EP, GA_WHICH, GA_IV0, GA_OV0, GA_CNT, PRESENTING, EJECT_PTR, GA_LISTED, GA_FIELDS = range(9)
# ``rbs``: per receive buffer (its ring in ``rb``)
RB_HEAD, RB_CNT, RB_FIELDS = range(3)
# ``pk``: per packet slot; its first RECORD columns are a measurement record's fields, in order
# (zfabric.sim.measure.RECORD_FIELDS: id, src, dst, length, created, injected, delivered, hops)
(
    PK_ID,
    PK_SRC,
    PK_DST,
    PK_LEN,
    PK_CREATED,
    PK_INJECTED,
    PK_DELIVERED,
    PK_HOPS,
    PK_DONE,
    PK_PAIR,
    PK_WATCHED,
    PK_QNEXT,
    PK_COUNT,
    PK_HF0,
    PK_HF,
    PK_HEAD,
    PK_HTAIL,
    PK_FIELDS,
) = range(18)
RECORD = PK_HOPS + 1
# ``scratch``: per port of the switch at hand (the allocator's matching)
MATCHED_IN, MATCHED_OUT, PICK_V, BEST, BEST_D, SCRATCH_FIELDS = range(6)
# ``grants``: per grant of the switch at hand, switch (G_) and VC (A_) allocation
G_GP, G_V, G_OV, A_GP, A_V, A_OV, GRANT_FIELDS = range(7)
# ``wf``: [phase, entry, field] flits on the wires; kind 0 a link, 1 an injection, 2 an ejection,
# 3 a link's flit that crossed its switch by the straight bypass (it lands nowhere)
WF_KIND, WF_TARGET, WF_FLIT, WF_FIELDS = range(4)
LINK, INJECTION, EJECTION, BYPASSED = range(4)
# ``pl``: the path log
PL_SLOT, PL_SW, PL_PORT, PL_FIELDS = range(4)
# ``ms``: the miss log
MS_IV, MS_HEAD, MS_FIELDS = range(3)
# ``dec``: per decision: its candidates in ``cand``, the next head and its head flits (both -1:
# the head stays as it is). A decision names no switch: a candidate is a (port, VC) of the
# switch at hand, so every switch and head routed alike shares one row.
DEC_START, DEC_N, DEC_NEXT_HEAD, DEC_NEXT_HF, DEC_FIELDS = range(5)
CAND_PORT, CAND_VC, CAND_FIELDS = range(3)
# ``pair``: per (source, destination) its injection choices in ``inj``
PAIR_START, PAIR_N, PAIR_FIELDS = range(3)
INJ_WHICH, INJ_HEAD, INJ_HF, INJ_FIELDS = range(4)

#: every table of the engine's state, in one tuple the compiled functions take whole
State = namedtuple(
    "State",
    "sw gp iv ov ep ga rbs pk buf rb inj_credit scratch grants wf wf_n wc wc_n"
    " dl pl ms dec cand hash_keys hash_vals hash_used pair inj cfg sc stall stepping stepping_n"
    " taking fronts fronts_n free front_keys merged ep_wait",
)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@compiled
def hash_home(keys: np.ndarray, key: int) -> int:
    """The slot where the probe for ``key`` starts."""
    return int((np.uint64(key) * _GOLDEN) >> np.uint64(20)) & (keys.shape[0] - 1)


@compiled
def hash_slot(keys: np.ndarray, key: int) -> int:
    """The slot of ``key`` in the open-addressed table ``keys``, or of the empty slot where it
    would go (linear probing; the table is never full)."""
    mask = keys.shape[0] - 1
    h = hash_home(keys, key)
    while keys[h] != -1 and keys[h] != key:
        h = (h + 1) & mask
    return h


@compiled
def hash_insert(keys: np.ndarray, vals: np.ndarray, key: int, val: int) -> None:
    h = hash_slot(keys, key)
    keys[h] = key
    vals[h] = val


@compiled
def hash_insert_many(keys: np.ndarray, vals: np.ndarray, new_keys: np.ndarray, new_vals):
    for i in range(new_keys.shape[0]):
        hash_insert(keys, vals, new_keys[i], new_vals[i])


@compiled
def hash_get(keys: np.ndarray, vals: np.ndarray, key: int) -> int:
    """The value of ``key``, -1 where the table does not hold it."""
    h = hash_slot(keys, key)
    return vals[h] if keys[h] == key else -1


@compiled
def hash_lookup_many(keys: np.ndarray, vals: np.ndarray, queries: np.ndarray, found: np.ndarray):
    """``found[i]``: the value of key ``queries[i]``, -1 where the table does not hold it."""
    for i in range(queries.shape[0]):
        found[i] = hash_get(keys, vals, queries[i])


@compiled
def hash_move(keys, vals, used, new_keys, new_vals, new_used) -> None:
    """The entries of ``keys``, with their marks in ``used``, into the empty table
    ``new_keys``."""
    for h in range(keys.shape[0]):
        if keys[h] != -1:
            slot = hash_slot(new_keys, keys[h])
            new_keys[slot], new_vals[slot], new_used[slot] = keys[h], vals[h], used[h]


@compiled
def push_packets(pk, ep, wait, sc, free, offers, slots):
    """Queue offered packets at their sources, in order, each in a slot taken from the free
    stack (``free[:sc[N_FREE]]``, which must hold enough) and written to ``slots``; ``offers``
    rows are (id, created, src, dst, length, pair, watched). ``wait``: ``ep_wait``."""
    for k in range(offers.shape[0]):
        sc[N_FREE] -= 1
        slot, src = free[sc[N_FREE]], offers[k, 2]
        slots[k] = slot
        pk[slot, :] = 0
        pk[slot, PK_ID] = offers[k, 0]
        pk[slot, PK_SRC] = src
        pk[slot, PK_DST] = offers[k, 3]
        pk[slot, PK_LEN] = offers[k, 4]
        pk[slot, PK_CREATED] = offers[k, 1]
        pk[slot, PK_INJECTED] = -1
        pk[slot, PK_DELIVERED] = -1
        pk[slot, PK_PAIR] = offers[k, 5]
        pk[slot, PK_WATCHED] = offers[k, 6]
        pk[slot, PK_QNEXT] = -1
        sc[WATCHED] += offers[k, 6]
        if ep[src, EP_QTAIL] < 0:
            ep[src, EP_QHEAD] = slot
            wait[src] = min(wait[src], offers[k, 1])
        else:
            pk[ep[src, EP_QTAIL], PK_QNEXT] = slot
        ep[src, EP_QTAIL] = slot


def prefetch(table: np.ndarray, row: int) -> None:
    """Ask the memory for the cache line of ``table``'s ``row`` (its entry, of a vector), to be
    read soon: a hint
    (LLVM's prefetch) compiled, nothing run as Python."""


@intrinsic
def _llvm_prefetch(typingctx, table, row):
    def codegen(context, builder, signature, args):
        kind = signature.args[0]
        array = context.make_array(kind)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        index = [args[1]] + [zero] * (kind.ndim - 1)
        at = cgutils.get_item_pointer(context, builder, kind, array, index)
        at = builder.bitcast(at, ir.IntType(8).as_pointer())
        word = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [at.type, word, word, word])
        # named as this llvmlite names the pointer type (LLVM renames an older spelling)
        function = builder.module.declare_intrinsic("llvm.prefetch", [at.type], hint)
        builder.call(function, [at, word(0), word(3), word(1)])  # a read, kept close, data
        return context.get_dummy_value()

    return types.void(table, row), codegen


@overload(prefetch)
def _prefetch_compiled(table, row):
    def hint(table, row):
        _llvm_prefetch(table, row)

    return hint


# ---- flits and FIFOs -------------------------------------------------------------------------
#
# Every function binds the tables it reads to locals first, for short names (compiled without
# numba's runtime, a binding costs no reference count).


@compiled(inline="always")
def _is_tail(pks: np.ndarray, flit: int) -> bool:
    slot, index = flit >> 16, flit & 0xFFFF
    return index == pks[slot, PK_COUNT] - 1 or (index == 0 and pks[slot, PK_HTAIL] != 0)


@compiled(inline="always")
def _hidden(pks: np.ndarray, flit: int) -> bool:
    """Taken by the endpoint whatever ``ready``: the first flit while it heads several, every
    head flit behind it but the last."""
    slot, index = flit >> 16, flit & 0xFFFF
    if index == 0:
        return pks[slot, PK_HF] > 1
    return index < pks[slot, PK_HF0] - 1


@compiled(inline="always")
def _at(buf: np.ndarray, ivs: np.ndarray, iv: int, k: int, depth: int) -> int:
    """The ``k``-th flit of input VC ``iv``'s FIFO (0: its front)."""
    return buf[iv * depth + (ivs[iv, IV_HEAD] + k) % depth]


@compiled(inline="always")
def _pop(st, iv: int, depth: int):
    """Take the front flit out of input VC ``iv``'s FIFO. Behind a tail the flit is a new
    packet's head, to be looked up; behind any other flit it is its packet's, which holds its
    output VC (taken as the head crossed), so nothing is looked up."""
    ivs, sc = st.iv, st.sc
    flit = st.buf[iv * depth + ivs[iv, IV_HEAD]]
    ivs[iv, IV_POPPED] = sc[CYCLE]
    ivs[iv, IV_HEAD] = (ivs[iv, IV_HEAD] + 1) % depth
    ivs[iv, IV_CNT] -= 1
    st.sw[ivs[iv, IV_SW], SW_CNT] -= 1
    sc[BUSY] -= 1
    if ivs[iv, IV_CNT] > 0 and _is_tail(st.pk, flit):
        _list_front(ivs, st.fronts, st.fronts_n, iv, sc[CYCLE] + 1)
    return flit


@compiled(inline="always")
def _send_credit(wc: np.ndarray, wc_n: np.ndarray, sent: int, target: int) -> None:
    wc[sent, wc_n[sent]] = target
    wc_n[sent] += 1


@compiled(inline="always")
def _send_flit(wf: np.ndarray, wf_n: np.ndarray, sent: int, kind: int, target: int, flit: int):
    n = wf_n[sent]
    wf[sent, n, WF_KIND] = kind
    wf[sent, n, WF_TARGET] = target
    wf[sent, n, WF_FLIT] = flit
    wf_n[sent] = n + 1


@compiled
def _fail(sc: np.ndarray, error: int, at: int) -> None:
    if sc[ERROR] == 0:
        sc[ERROR] = error
        sc[ERROR_AT] = at


# ---- the work lists --------------------------------------------------------------------------
#
# A switch is stepped in a cycle only if its step could change something: it did something in
# the previous cycle, or a flit landed in it or a credit on one of its outputs at that cycle's
# end. Otherwise its inputs (FIFOs, credits, owners, pointers, decisions) are those of a step
# that changed nothing, so this one would change nothing either: no pointer moves without a
# grant or a pick. ``stepping[c & 1]`` lists the switches of cycle ``c`` in the order they were
# woken, stepped in that order: switches do not interact within a cycle (a switch reads only its
# own FIFOs, output VCs and pointers; what it sends lands at the cycle's end), so the order
# changes nothing of what the cycle computes (an invariant broken at two switches in one cycle
# may be reported from either); on the E6 Znode a sort into index order, as the reference's
# loop has, cost more than reading the tables in order saved (about 25 us a cycle of 518
# listed switches). The attachments holding flits are listed in ``taking``, visited in
# index order (the order deliveries are reported in).
#
# The lists pay on a large fabric mostly idle in any cycle (the Znode thesis's E6: 17,440
# switches, 131,072 attachments); on a small one, or one whose switches are nearly all busy,
# keeping them costs more than a scan of every switch and attachment saves, so there (``cfg``
# LISTS 0) the cycle scans them all, as :class:`~zfabric.sim.fast.FastModel` chooses.


@compiled(inline="always")
def _wake(sws: np.ndarray, stepping: np.ndarray, stepping_n: np.ndarray, s: int, cycle: int):
    """Put switch ``s`` on the list of cycle ``cycle`` (once)."""
    if sws[s, SW_WAKE] != cycle:
        sws[s, SW_WAKE] = cycle
        n = stepping_n[cycle & 1]
        stepping[cycle & 1, n] = s
        stepping_n[cycle & 1] = n + 1


@compiled(inline="always")
def _credit_may_change(st, ov: int) -> bool:
    """Whether a credit just come back to output VC ``ov`` may change what its switch does. A
    switch off the work list last stepped with no request at all (one request is always
    granted), so none of its heads found a usable output VC. Held by a packet, ``ov`` is asked
    for only by its holder, and only with a flit to send: with none, the flit that lands there
    steps the switch itself. Free, it becomes usable to a head only as its credits reach a
    threshold (:func:`_usable`, :func:`_room`): the first, a whole packet's room under
    cut-through (twice that entering a bubble ring), every credit home for an atomic VC."""
    owner = st.ov[ov, OWNER]
    if owner >= 0:
        return st.iv[owner, IV_CNT] > 0
    credit, whole = st.ov[ov, CREDIT], st.cfg[WHOLE]
    return (
        credit == 1
        or (whole > 0 and (credit == whole or credit == 2 * whole))
        or (st.ov[ov, OV_ATOMIC] != 0 and credit == st.cfg[DEPTH])
    )


@compiled(inline="always")
def _list_front(ivs: np.ndarray, fronts: np.ndarray, fronts_n: np.ndarray, iv: int, cycle: int):
    """Put input VC ``iv`` on the list of fronts :func:`_lookups` looks at in ``cycle`` (once):
    a flit landed in it, or its front left."""
    if ivs[iv, IV_LISTED] != cycle:
        ivs[iv, IV_LISTED] = cycle
        n = fronts_n[cycle & 1]
        fronts[cycle & 1, n] = iv
        fronts_n[cycle & 1] = n + 1


@compiled
def _sort(a: np.ndarray, first: int, end: int) -> None:
    """Sort ``a[first:end]`` in place (heapsort: numpy's sort needs the runtime the kernel
    is compiled without)."""
    n = end - first
    for root in range(n // 2 - 1, -1, -1):
        _sift(a, first, root, n)
    for last in range(n - 1, 0, -1):
        a[first], a[first + last] = a[first + last], a[first]
        _sift(a, first, 0, last)


@compiled
def _merge(a: np.ndarray, middle: int, end: int, merged: np.ndarray) -> None:
    """``a[:end]`` in order, its two runs ``a[:middle]`` and ``a[middle:end]`` each in order
    (``merged``: room for ``end`` entries). Nothing is copied when a run is empty (no
    attachment listed since the last cycle, or none left from it) or the two are in order."""
    if middle == 0 or middle == end or a[middle - 1] <= a[middle]:
        return
    i, j = 0, middle
    for k in range(end):
        if j == end or (i < middle and a[i] <= a[j]):
            merged[k] = a[i]
            i += 1
        else:
            merged[k] = a[j]
            j += 1
    for k in range(end):
        a[k] = merged[k]


@compiled(inline="always")
def _sift(a: np.ndarray, first: int, root: int, n: int) -> None:
    value = a[first + root]
    while True:
        child = 2 * root + 1
        if child >= n:
            break
        if child + 1 < n and a[first + child + 1] > a[first + child]:
            child += 1
        if a[first + child] <= value:
            break
        a[first + root] = a[first + child]
        root = child
    a[first + root] = value


# ---- routing table ---------------------------------------------------------------------------


@compiled
def _lookups(st) -> int:
    """Before a cycle: the decision of every head step 1 may route in it, into PENDING; the
    misses into the miss log. Returns the misses. Such a head is at the front of an input VC
    listed in ``fronts`` (a flit landed in it, or its front left, in the cycle before): any
    other front is routed already, holds its output VC, or is still missing flits, and stays
    so until a flit lands or leaves. A head looked up here is routed in this cycle: its switch
    is stepped (a landing or a step that moved a flit put it on the list). Two passes: the
    heads and their raw states' keys first (into ``front_keys``, beside the heads' input VCs
    in ``fronts``), each state's slot asked of the memory, then the probes (on a large fabric
    the table's slots are far apart, and each probe would wait on its own)."""
    ivs, pks, buf, ms = st.iv, st.pk, st.buf, st.ms
    keys, values, used, front_keys = st.hash_keys, st.hash_vals, st.hash_used, st.front_keys
    misses = 0
    n_iv, depth, stores = st.cfg[N_IV], st.cfg[DEPTH], st.cfg[STORES] != 0
    now, fronts = st.sc[CYCLE] & 1, st.fronts
    heads = 0  # the fronts to look up, kept in the list's first places
    for i in range(st.fronts_n[now]):
        iv = fronts[now, i]
        if ivs[iv, IV_CNT] == 0 or ivs[iv, ASSIGN] >= 0 or ivs[iv, DECISION] >= 0:
            continue
        slot = _at(buf, ivs, iv, 0, depth) >> 16
        if ivs[iv, IV_CNT] < pks[slot, PK_COUNT if stores else PK_HF]:
            continue
        key = pks[slot, PK_HEAD] * n_iv + iv
        fronts[now, heads] = iv
        front_keys[heads] = key
        prefetch(keys, hash_home(keys, key))
        heads += 1
    st.fronts_n[now] = heads  # a cycle run again after a miss looks up only these
    for i in range(heads):
        iv, key = fronts[now, i], front_keys[i]
        h = hash_slot(keys, key)
        if keys[h] == key:
            ivs[iv, PENDING] = values[h]
            used[h] = 1
        else:
            ms[misses, MS_IV] = iv
            ms[misses, MS_HEAD] = key // n_iv
            misses += 1
    if st.cfg[BYPASS]:
        misses = _bypass_lookups(st, misses)
    st.sc[N_MISS] = misses
    return misses


@compiled
def _bypass_lookups(st, misses: int) -> int:
    """The decisions of the heads on links that may bypass their switch this cycle (into an
    empty input VC with a straight output), into PENDING; the misses after ``misses``."""
    gps, ivs, pks, wf, ms = st.gp, st.iv, st.pk, st.wf, st.ms
    keys, values, used, n_iv = st.hash_keys, st.hash_vals, st.hash_used, st.cfg[N_IV]
    landing = st.sc[PHASE]
    for k in range(st.wf_n[landing]):
        iv, flit = wf[landing, k, WF_TARGET], wf[landing, k, WF_FLIT]
        if wf[landing, k, WF_KIND] != LINK or flit & 0xFFFF != 0:
            continue
        if gps[ivs[iv, IV_GP], GP_STRAIGHT] < 0 or ivs[iv, IV_CNT] > 0:
            continue
        key = pks[flit >> 16, PK_HEAD] * n_iv + iv
        h = hash_slot(keys, key)
        if keys[h] == key:
            ivs[iv, PENDING] = values[h]
            used[h] = 1
        else:
            ms[misses, MS_IV] = iv
            ms[misses, MS_HEAD] = pks[flit >> 16, PK_HEAD]
            misses += 1
    return misses


# ---- endpoints: injection --------------------------------------------------------------------


@compiled
def _start(st, e: int, slot: int) -> bool:
    """A head's (attachment, VC): the first with a credit, the injection choices in order and
    the VCs from the injection pointer."""
    eps, pks, pairs, injs, credits = st.ep, st.pk, st.pair, st.inj, st.inj_credit
    n = st.cfg[INJ_VCS]
    pair = pks[slot, PK_PAIR]
    for c in range(pairs[pair, PAIR_START], pairs[pair, PAIR_START] + pairs[pair, PAIR_N]):
        ga = eps[e, EP_ATT0] + injs[c, INJ_WHICH]
        for k in range(n):
            vc = (eps[e, EP_PTR] + k) % n
            if credits[ga * n + vc] > 0:
                eps[e, EP_QHEAD] = pks[slot, PK_QNEXT]
                if eps[e, EP_QHEAD] < 0:
                    eps[e, EP_QTAIL] = -1
                eps[e, EP_WHICH] = injs[c, INJ_WHICH]
                eps[e, EP_VC] = vc
                eps[e, EP_PTR] = (vc + 1) % n
                heads = injs[c, INJ_HF]
                pks[slot, PK_HF0] = heads
                pks[slot, PK_HF] = heads
                pks[slot, PK_COUNT] = pks[slot, PK_LEN] + heads - 1
                pks[slot, PK_HEAD] = injs[c, INJ_HEAD]
                pks[slot, PK_INJECTED] = st.sc[CYCLE]
                eps[e, EP_SLOT] = slot
                eps[e, EP_NEXT] = 0
                return True
    return False


@compiled
def _inject(st) -> bool:
    """Each endpoint sends at most one flit: the next of the packet it injects, or the head of
    the next packet in its source queue, when its attachment's VC has a credit."""
    eps, pks, gas, credits, sc, wait = st.ep, st.pk, st.ga, st.inj_credit, st.sc, st.ep_wait
    wf, wf_n = st.wf, st.wf_n
    sent = 1 - sc[PHASE]
    cycle = sc[CYCLE]
    moved = False
    n = st.cfg[INJ_VCS]
    for e in range(eps.shape[0]):
        if wait[e] > cycle:
            continue
        slot = eps[e, EP_SLOT]
        if slot < 0:
            slot = eps[e, EP_QHEAD]
            if slot < 0:
                wait[e] = NEVER
                continue
            if pks[slot, PK_CREATED] > cycle:
                wait[e] = pks[slot, PK_CREATED]
                continue
            if not _start(st, e, slot):
                wait[e] = NEVER
                continue
        ga = eps[e, EP_ATT0] + eps[e, EP_WHICH]
        credit = ga * n + eps[e, EP_VC]
        if credits[credit] == 0:
            wait[e] = NEVER
            continue
        credits[credit] -= 1
        index = eps[e, EP_NEXT]
        eps[e, EP_NEXT] = index + 1
        if index + 1 == pks[slot, PK_COUNT]:
            eps[e, EP_SLOT] = -1
        _send_flit(wf, wf_n, sent, 1, gas[ga, GA_IV0] + eps[e, EP_VC], slot << 16 | index)
        sc[IN_NETWORK] += 1
        moved = True
    return moved


# ---- one switch ------------------------------------------------------------------------------


@compiled(inline="always")
def _next_hf(st, d: int, slot: int) -> int:
    """The head flits of the next head decision ``d`` gives the packet in ``slot``."""
    hf = st.dec[d, DEC_NEXT_HF]
    return st.pk[slot, PK_HF] if hf < 0 else hf


@compiled(inline="always")
def _next_head(st, d: int, slot: int) -> int:
    """The head decision ``d`` gives the packet in ``slot`` (-1 in the table: the one it has)."""
    head = st.dec[d, DEC_NEXT_HEAD]
    return st.pk[slot, PK_HEAD] if head < 0 else head


@compiled(inline="always")
def _cand_ov(st, base: int, c: int) -> int:
    """The output VC of candidate ``c`` at the switch whose ports start at ``base``."""
    return st.gp[base + st.cand[c, CAND_PORT], GP_OV0] + st.cand[c, CAND_VC]


@compiled(inline="always")
def _select(st, base: int, n_ports: int, gp: int, iv: int) -> int:
    """Step 2 for a head: the output VC it requests among its free candidates (with a credit
    unless VC allocation is a stage of its own), or -1. Routes it first (step 1) if it has no
    decision yet; with a route stage of its own that is all it does this cycle (-2). ``base``:
    the switch's first port."""
    ivs, ovs, decs, cands, cfg = st.iv, st.ov, st.dec, st.cand, st.cfg
    if ivs[iv, DECISION] < 0:
        ivs[iv, DECISION] = ivs[iv, PENDING]
        if cfg[ROUTE_STAGE]:
            return -2
    d = ivs[iv, DECISION]
    vc_stage = cfg[VC_STAGE] != 0
    selection = cfg[SELECTION]
    depth, low, whole = cfg[DEPTH], cfg[LOW], cfg[WHOLE]
    pointer = st.gp[gp, RR_SEL]
    first, end = decs[d, DEC_START], decs[d, DEC_START] + decs[d, DEC_N]
    if selection == RANDOM:  # the drawn one of the usable ports (router_settings.random_pick)
        ports = 0  # a bit per usable port
        for c in range(first, end):
            ov = _cand_ov(st, base, c)
            if _usable(st, gp, ov, vc_stage, depth, whole):
                ports |= 1 << cands[c, CAND_PORT]
        count, rest = 0, ports
        while rest:
            count += rest & 1
            rest >>= 1
        if count == 0:
            return -1
        rank = (pointer & 0xFF) % count
        pointer = 0
        while not (ports >> pointer) & 1 or rank:
            if (ports >> pointer) & 1:
                rank -= 1
            pointer += 1
    best = -1
    best_key = 0
    for c in range(first, end):
        ov = _cand_ov(st, base, c)
        if not _usable(st, gp, ov, vc_stage, depth, whole):
            continue
        credit = ovs[ov, CREDIT]
        if selection == FIRST_FREE:
            return ov
        distance = cands[c, CAND_PORT] - pointer
        if distance < 0:
            distance += n_ports
        # round-robin: the first port at or after the pointer, the lowest VC within it
        key = distance * 64 + cands[c, CAND_VC]
        if selection == OCCUPANCY:  # the lowest level first, low occupancy first within it
            high = 1 if credit < low else 0
            key += (ovs[ov, OV_LEVEL] * 2 + high) * n_ports * 64
        if best < 0 or key < best_key:
            best = ov
            best_key = key
    return best


@compiled(inline="always")
def _usable(st, gp: int, ov: int, vc_stage: bool, depth: int, whole: int) -> bool:
    """Output VC ``ov`` can be requested by a head of input port ``gp``: free, with a credit
    unless VC allocation is a stage of its own, and room as :func:`_room` says."""
    ovs = st.ov
    if ovs[ov, OWNER] >= 0:
        return False
    credit = ovs[ov, CREDIT]
    if not vc_stage and credit <= 0:
        return False
    return _room(ovs, ov, depth, _needed(st, gp, ov, whole))


@compiled(inline="always")
def _needed(st, gp: int, ov: int, whole: int) -> int:
    """The room a head of input port ``gp`` needs on ``ov``: ``whole``, twice that when it
    enters a ring under bubble flow control (its input is not on the output's ring)."""
    ring = st.ov[ov, OV_RING]
    return 2 * whole if ring and ring != st.gp[gp, GP_RING] else whole


@compiled(inline="always")
def _room(ovs, ov: int, depth: int, whole: int) -> bool:
    """The credit side of a free output VC: under cut-through and store-and-forward room for
    the longest packet (``whole``, 0 under wormhole), for an adaptive VC every credit home."""
    credit = ovs[ov, CREDIT]
    return credit >= whole and (not ovs[ov, OV_ATOMIC] or credit == depth)


@compiled(inline="always")
def _allocate(st, base: int, n_ports: int, req: int, rr_in: int, rr_out: int, grant: int) -> int:
    """Steps 3 and 4 at the switch whose ports are ``base`` to ``base + n_ports - 1``, on the
    requests in column ``req`` of ``st.iv`` (an output VC or -1) and the pointers in columns
    ``rr_in`` and ``rr_out`` of ``st.gp``, once per iteration: the grants into columns
    ``grant`` to ``grant + 2`` of ``st.grants``, their count back."""
    gps, ivs, ovs, scratch, grants = st.gp, st.iv, st.ov, st.scratch, st.grants
    for p in range(n_ports):
        scratch[p, MATCHED_IN] = 0
        scratch[p, MATCHED_OUT] = 0
    granted = 0
    for _ in range(st.cfg[ITERATIONS]):
        for o in range(n_ports):
            scratch[o, BEST] = -1
        picked = False
        for p in range(n_ports):
            scratch[p, PICK_V] = -1
            if scratch[p, MATCHED_IN]:
                continue
            gp = base + p
            n, iv0, pointer = gps[gp, GP_NIV], gps[gp, GP_IV0], gps[gp, rr_in]
            for k in range(n):
                v = pointer + k
                if v >= n:
                    v -= n
                target = ivs[iv0 + v, req]
                if target < 0:
                    continue
                o = ovs[target, OV_PORT]
                if scratch[o, MATCHED_OUT]:
                    continue
                scratch[p, PICK_V] = v
                distance = p - gps[base + o, rr_out]
                if distance < 0:
                    distance += n_ports
                if scratch[o, BEST] < 0 or distance < scratch[o, BEST_D]:
                    scratch[o, BEST] = p
                    scratch[o, BEST_D] = distance
                picked = True
                break
        if not picked:
            break
        for o in range(n_ports):
            p = scratch[o, BEST]
            if p < 0:
                continue
            v = scratch[p, PICK_V]
            grants[granted, grant] = base + p
            grants[granted, grant + 1] = v
            grants[granted, grant + 2] = ivs[gps[base + p, GP_IV0] + v, req]
            granted += 1
            scratch[p, MATCHED_IN] = 1
            scratch[o, MATCHED_OUT] = 1
    return granted


@compiled(inline="always")
def _leaving(st, iv: int):
    """Flits the front of input VC ``iv`` takes out of its FIFO when it crosses (a routed head:
    itself and the surplus head flits behind it), and whether they end the packet."""
    buf, ivs, pks = st.buf, st.iv, st.pk
    depth = st.cfg[DEPTH]
    front = _at(buf, ivs, iv, 0, depth)
    slot, index = front >> 16, front & 0xFFFF
    if index != 0 or pks[slot, PK_HF] == 1:
        return 1, _is_tail(pks, front)
    leaving = 1 + pks[slot, PK_HF] - _next_hf(st, ivs[iv, DECISION], slot)
    tail = False
    for k in range(leaving):
        tail = tail or _is_tail(pks, _at(buf, ivs, iv, k, depth))
    return leaving, tail


@compiled(inline="always")
def _stage_picks(st, base: int, n_ports: int) -> bool:
    """Stages 4 and 5, switch allocation's input stage: per input port, the first requesting VC
    at or after its pointer that still requests if the port's staged pick crosses now; it
    becomes the staged pick and the pointer moves past it. The requests become last cycle's
    staged picks, which the output stage grants or drops. Whether some port picked."""
    gps, ivs, ovs = st.gp, st.iv, st.ov
    any_pick = False
    for gp in range(base, base + n_ports):
        n, iv0 = gps[gp, GP_NIV], gps[gp, GP_IV0]
        staged = gps[gp, STAGED_V]
        excluded = -1
        if staged >= 0:
            leaving, tail = _leaving(st, iv0 + staged)
            credit = ovs[gps[gp, STAGED_OV], CREDIT]
            if ivs[iv0 + staged, IV_CNT] <= leaving or credit < 2 or tail:
                excluded = staged
        pick = -1
        for k in range(n):
            v = (gps[gp, RR_IN] + k) % n
            if v != excluded and ivs[iv0 + v, REQ] >= 0:
                pick = v
                break
        pick_ov = -1
        if pick >= 0:
            gps[gp, RR_IN] = (pick + 1) % n
            pick_ov = ivs[iv0 + pick, REQ]
            any_pick = True
        for v in range(n):
            ivs[iv0 + v, REQ] = -1
        if staged >= 0:
            ivs[iv0 + staged, REQ] = gps[gp, STAGED_OV]
        gps[gp, STAGED_V] = pick
        gps[gp, STAGED_OV] = pick_ov
    return any_pick


@compiled(inline="always")
def _vc_stage_picks(st, base: int, n_ports: int) -> bool:
    """Stage 5, VC allocation's input stage: per input port, the first head requesting an
    output VC at or after its VC-allocation pointer, other than last cycle's staged head; the
    requests become last cycle's staged heads. Whether some port picked or had one staged."""
    gps, ivs = st.gp, st.iv
    any_pick = False
    for gp in range(base, base + n_ports):
        n, iv0 = gps[gp, GP_NIV], gps[gp, GP_IV0]
        staged = gps[gp, VSTAGED_V]
        pick = -1
        for k in range(n):
            v = (gps[gp, VA_IN] + k) % n
            if v != staged and ivs[iv0 + v, VREQ] >= 0:
                pick = v
                break
        pick_ov = -1
        if pick >= 0:
            gps[gp, VA_IN] = (pick + 1) % n
            pick_ov = ivs[iv0 + pick, VREQ]
            any_pick = True
        for v in range(n):
            ivs[iv0 + v, VREQ] = -1
        if staged >= 0:
            ivs[iv0 + staged, VREQ] = gps[gp, VSTAGED_OV]
            any_pick = True
        gps[gp, VSTAGED_V] = pick
        gps[gp, VSTAGED_OV] = pick_ov
    return any_pick


@compiled(inline="always")
def _drop_surplus(st, iv: int, slot: int) -> None:
    """A crossing head takes out of its FIFO the head flits its next head no longer needs,
    returning their credits with its own; if they held the tail, the head ends the packet."""
    pks, ivs, sc = st.pk, st.iv, st.sc
    heads = pks[slot, PK_HF]
    if heads == 1:
        return
    depth = st.cfg[DEPTH]
    keep = _next_hf(st, ivs[iv, DECISION], slot)
    for _ in range(heads - keep):
        dropped = _pop(st, iv, depth)
        index = dropped & 0xFFFF
        if st.cfg[CHECKS] and ((dropped >> 16) != slot or not 0 < index < pks[slot, PK_HF0]):
            _fail(sc, SURPLUS, slot)
        if _is_tail(pks, dropped):
            pks[slot, PK_HTAIL] = 1
        _send_credit(st.wc, st.wc_n, 1 - sc[PHASE], ivs[iv, IV_CREDIT_TO])
        sc[IN_NETWORK] -= 1
    pks[slot, PK_HF] = keep


@compiled(inline="always")
def _requests(st, s: int, base: int, n_ports: int):
    """Step 2 (with step 1 for heads not routed yet): each input VC's request into REQ, or,
    with VC allocation a stage of its own, a head's into VREQ. Whether a head was routed, how
    many input VCs request in REQ and the last of them. A head whose candidates were all held
    by other packets when it last asked, none released at this switch since, asks nothing
    again: an output VC is held until its packet's tail crosses the switch, and each such
    release is counted."""
    gps, ivs, ovs, pks, buf = st.gp, st.iv, st.ov, st.pk, st.buf
    vc_stage = st.cfg[VC_STAGE] != 0
    depth, stores = st.cfg[DEPTH], st.cfg[STORES] != 0
    releases, bypass = st.sw[s, SW_RELEASES], st.cfg[BYPASS] != 0
    if releases > HELD_MAX:
        releases = _restart_releases(st, s, base, n_ports)
    routed = False
    requests, asker = 0, -1
    for gp in range(base, base + n_ports):
        iv0 = gps[gp, GP_IV0]
        for iv in range(iv0, iv0 + gps[gp, GP_NIV]):
            ivs[iv, REQ] = -1
            ivs[iv, VREQ] = -1
            if ivs[iv, IV_CNT] == 0:
                continue
            target = ivs[iv, ASSIGN]
            if target < 0:
                if ivs[iv, IV_HELD] == releases:
                    continue
                slot = _at(buf, ivs, iv, 0, depth) >> 16
                # routed once its head flits are in, under store-and-forward its whole packet
                need = pks[slot, PK_COUNT] if stores else pks[slot, PK_HF]
                if ivs[iv, DECISION] >= 0 or ivs[iv, IV_CNT] >= need:
                    target = _select(st, base, n_ports, gp, iv)
                    if target == -2:
                        routed = True
                        target = -1
                    elif target == -1 and _all_held(st, base, ivs[iv, DECISION]):
                        ivs[iv, IV_HELD] = releases
                if vc_stage:
                    ivs[iv, VREQ] = target
                    continue
            elif ovs[target, CREDIT] == 0:
                target = -1
            ivs[iv, REQ] = target
            if target >= 0:
                requests += 1
                asker = iv
                if bypass:
                    gps[base + ovs[target, OV_PORT], GP_ASKED] = st.sc[CYCLE]
    return routed, requests, asker


@compiled
def _restart_releases(st, s: int, base: int, n_ports: int) -> int:
    """Switch ``s``'s release count past what a HELD mark holds (a long run's, at up to a
    release per output port a cycle): 0 again, and its input VCs' marks cleared, so each of
    their heads asks again, as after a release, and no old mark matches the new counts."""
    gps, ivs = st.gp, st.iv
    for gp in range(base, base + n_ports):
        for iv in range(gps[gp, GP_IV0], gps[gp, GP_IV0] + gps[gp, GP_NIV]):
            ivs[iv, IV_HELD] = -1
    st.sw[s, SW_RELEASES] = 0
    return 0


@compiled(inline="always")
def _all_held(st, base: int, d: int) -> bool:
    """Every candidate output VC of decision ``d`` at the switch whose ports start at ``base``
    is held by a packet (not the asking head's: a head at the front holds none)."""
    ovs = st.ov
    for c in range(st.dec[d, DEC_START], st.dec[d, DEC_START] + st.dec[d, DEC_N]):
        ov = _cand_ov(st, base, c)
        if ovs[ov, OWNER] < 0:
            return False
    return True


@compiled(inline="always")
def _acquire(st, base: int, n_ports: int) -> int:
    """VC allocation (stages 3 to 5): the heads that won an output VC take it; with stage 5's
    re-check only if it is still free. Returns how many took one."""
    gps, ivs, ovs, grants, cfg = st.gp, st.iv, st.ov, st.grants, st.cfg
    vc_split, depth = cfg[VC_SPLIT] != 0, cfg[DEPTH]
    won = _allocate(st, base, n_ports, VREQ, VA_IN, VA_OUT, A_GP)
    acquired = 0
    for k in range(won):
        gp, v, ov = grants[k, A_GP], grants[k, A_V], grants[k, A_OV]
        p, o = gp - base, ovs[ov, OV_PORT]
        if vc_split:
            # the VC output stage's grant moves its pointer, but takes the output VC only if
            # it is still free: another head may have acquired it last cycle
            gps[base + o, VA_OUT] = (p + 1) % n_ports
            if ovs[ov, OWNER] >= 0 or not _room(ovs, ov, depth, _needed(st, gp, ov, cfg[WHOLE])):
                continue
        iv = gps[gp, GP_IV0] + v
        ivs[iv, ASSIGN] = ov
        ovs[ov, OWNER] = iv
        gps[gp, RR_SEL] = _next_select(gps[gp, RR_SEL], o, n_ports, cfg[SELECTION])
        if not vc_split:  # else it moved when the VC input stage picked
            gps[gp, VA_IN] = (v + 1) % gps[gp, GP_NIV]
        gps[base + o, VA_OUT] = (p + 1) % n_ports
        acquired += 1
    return acquired


@compiled(inline="always")
def _next_select(select: int, o: int, n_ports: int, selection: int) -> int:
    """A head took output port ``o``: the selection pointer moves past it, or under ``random``
    the port's LFSR steps (zfabric.router_settings.lfsr_step)."""
    if selection == RANDOM:
        return (select >> 1) ^ (LFSR_TAPS if select & 1 else 0)
    return (o + 1) % n_ports


@compiled(inline="always")
def _traverse(st, s: int, base: int, n_ports: int, granted: int) -> None:
    """Step 5: every granted flit leaves its FIFO and crosses; credits go upstream."""
    gps, ovs, grants, cfg = st.gp, st.ov, st.grants, st.cfg
    vc_stage, split = cfg[VC_STAGE] != 0, cfg[SPLIT] != 0
    depth = cfg[DEPTH]
    for k in range(granted):
        gp, v, ov = grants[k, G_GP], grants[k, G_V], grants[k, G_OV]
        p, o = gp - base, ovs[ov, OV_PORT]
        iv = gps[gp, GP_IV0] + v
        flit = _pop(st, iv, depth)
        if flit & 0xFFFF == 0:  # a head
            _drop_surplus(st, iv, flit >> 16)
            if not vc_stage:
                gps[gp, RR_SEL] = _next_select(gps[gp, RR_SEL], o, n_ports, cfg[SELECTION])
        _cross(st, s, iv, ov, flit)
        if not split:  # else it moved when the input stage picked
            gps[gp, RR_IN] = (v + 1) % gps[gp, GP_NIV]
        gps[base + o, RR_OUT] = (p + 1) % n_ports


@compiled(inline="always")
def _cross(st, s: int, iv: int, ov: int, flit: int) -> None:
    """Step 5 for one flit leaving input VC ``iv`` on ``ov``: the credit spent, a head's owner
    and next head, a tail's release; the flit and a credit go out."""
    ivs, ovs, pks, cfg, sc, pl = st.iv, st.ov, st.pk, st.cfg, st.sc, st.pl
    sent = 1 - sc[PHASE]
    slot = flit >> 16
    ovs[ov, CREDIT] -= 1
    if flit & 0xFFFF == 0:  # a head
        if not cfg[VC_STAGE]:
            ivs[iv, ASSIGN] = ov
            ovs[ov, OWNER] = iv
        pks[slot, PK_HEAD] = _next_head(st, ivs[iv, DECISION], slot)
        ivs[iv, DECISION] = -1
        if cfg[PATHS]:
            n = sc[N_PATH_LOG]
            pl[n, PL_SLOT] = slot
            pl[n, PL_SW] = s
            pl[n, PL_PORT] = ovs[ov, OV_PORT]
            sc[N_PATH_LOG] = n + 1
    if _is_tail(pks, flit):
        ivs[iv, ASSIGN] = -1
        ovs[ov, OWNER] = -1
        st.sw[s, SW_RELEASES] += 1
    target = ovs[ov, OV_DST]
    if target >= 0:
        _send_flit(st.wf, st.wf_n, sent, LINK, target, flit)
    else:
        _send_flit(st.wf, st.wf_n, sent, EJECTION, -1 - target, flit)
    _send_credit(st.wc, st.wc_n, sent, ivs[iv, IV_CREDIT_TO])


@compiled
def _bypass(st) -> None:
    """The straight bypass (docs/microarchitecture.md, Straight bypass): each flit on a link in
    its last cycle crosses its switch now, instead of landing in its input VC's FIFO, when that
    FIFO is empty, the input feeds an output straight that no buffered flit of the switch asked
    this cycle, and the flit's output VC there (the one its VC holds, or a head's step 2 choice)
    has a credit. That output's state is still the cycle's start state (nothing asked it, so
    nothing was granted on it). The switch is stepped next cycle: an owner may have changed."""
    gps, ivs, ovs, pks, wf, sws, cfg = st.gp, st.iv, st.ov, st.pk, st.wf, st.sw, st.cfg
    landing, cycle = st.sc[PHASE], st.sc[CYCLE]
    for k in range(st.wf_n[landing]):
        if wf[landing, k, WF_KIND] != LINK:
            continue
        iv, flit = wf[landing, k, WF_TARGET], wf[landing, k, WF_FLIT]
        gp = ivs[iv, IV_GP]
        straight = gps[gp, GP_STRAIGHT]
        if straight < 0 or gps[straight, GP_ASKED] == cycle:
            continue
        if ivs[iv, IV_CNT] > 0 or ivs[iv, IV_POPPED] == cycle:
            continue  # its FIFO held a flit at the start of the cycle
        s = ivs[iv, IV_SW]
        if flit & 0xFFFF == 0:  # a head: step 2's choice, as if it were at the front
            ov = _select(st, sws[s, SW_PORT0], sws[s, SW_NPORTS], gp, iv)
            if ov < 0 or ovs[ov, OV_GP] != straight:
                ivs[iv, DECISION] = -1  # it waits at the front like any head: routed there
                continue
            pks[flit >> 16, PK_HOPS] += 1
        else:
            ov = ivs[iv, ASSIGN]
            if ov < 0 or ovs[ov, OV_GP] != straight or ovs[ov, CREDIT] == 0:
                continue
        wf[landing, k, WF_KIND] = BYPASSED
        _cross(st, s, iv, ov, flit)
        if cfg[LISTS]:
            _wake(sws, st.stepping, st.stepping_n, s, cycle + 1)


@compiled(inline="always")
def _switch_cycle(st, s: int) -> bool:
    """Steps 1 to 5 at switch ``s``, with the VC allocation and split stages of ``stages`` 3 to
    5; whether anything happened (a flit moved, a head was routed, acquired or staged).
    Inlined in the cycle's loop over the switches: a call passes the whole state tuple, every
    array's fields one by one."""
    cfg = st.cfg
    base, n_ports = st.sw[s, SW_PORT0], st.sw[s, SW_NPORTS]
    routed, requests, asker = _requests(st, s, base, n_ports)
    staged = False
    if cfg[SPLIT]:
        staged = _stage_picks(st, base, n_ports)
    granted = 0
    if requests == 1 and not cfg[SPLIT]:
        # one request: every pointer of the allocator leads to it, and it is granted
        gp = st.iv[asker, IV_GP]
        st.grants[0, G_GP], st.grants[0, G_V] = gp, asker - st.gp[gp, GP_IV0]
        st.grants[0, G_OV] = st.iv[asker, REQ]
        granted = 1
    elif requests or cfg[SPLIT]:  # else no input picks: the allocation grants nothing
        granted = _allocate(st, base, n_ports, REQ, RR_IN, RR_OUT, G_GP)
    if cfg[VC_SPLIT]:
        staged = _vc_stage_picks(st, base, n_ports) or staged
    acquired = _acquire(st, base, n_ports) if cfg[VC_STAGE] else 0
    if granted == 0:
        return routed or acquired > 0 or staged
    _traverse(st, s, base, n_ports, granted)
    return True


# ---- end of the cycle: links land, users take flits ------------------------------------------


@compiled
def _mix64(x):
    """splitmix64's finaliser (as ``zfabric.sim.model.EjectStalls``)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@compiled
def _ready(stall: np.ndarray, endpoint: int, which: int, cycle: int) -> bool:
    """:class:`~zfabric.sim.model.EjectStalls`' draw: ``stall`` holds its base and threshold."""
    x = stall[0] ^ (np.uint64(endpoint) << np.uint64(40))
    x ^= np.uint64(which) << np.uint64(32)
    x ^= np.uint64(cycle)
    return (_mix64(x) >> np.uint64(32)) >= stall[1]


@compiled
def _deliver(st, endpoint: int, flit: int) -> None:
    pks, sc = st.pk, st.sc
    slot, index = flit >> 16, flit & 0xFFFF
    carries = index == 0 or index >= pks[slot, PK_HF0]  # a head flit behind the first: stripped
    if st.cfg[CHECKS]:
        if endpoint != pks[slot, PK_DST]:
            _fail(sc, WRONG_ENDPOINT, slot)
        if carries and max(0, index - pks[slot, PK_HF0] + 1) != pks[slot, PK_DONE]:
            _fail(sc, OUT_OF_ORDER, slot)
    if carries:
        pks[slot, PK_DONE] += 1
    sc[IN_NETWORK] -= 1
    if _is_tail(pks, flit):
        pks[slot, PK_DELIVERED] = sc[CYCLE]
        sc[DELIVERED] += 1
        st.dl[sc[N_DELIVERED_LOG]] = slot
        sc[N_DELIVERED_LOG] += 1
        # the slot is free for the next offers, which come after Python read the log
        st.free[sc[N_FREE]] = slot
        sc[N_FREE] += 1
        sc[WATCHED] -= pks[slot, PK_WATCHED]


@compiled
def _take(st) -> bool:
    """Each attachment presents the front of its presented ejection VC (choosing one from its
    ejection pointer when it has none); the user takes it when ``ready`` (a hidden head flit
    whatever ``ready``), and its credit is back at the local output next cycle. Whether a flit
    was taken or presented."""
    gas, rbs, rb, ovs, pks, sc = st.ga, st.rbs, st.rb, st.ov, st.pk, st.sc
    sws, stepping, stepping_n, taking = st.sw, st.stepping, st.stepping_n, st.taking
    depth = st.cfg[DEPTH]
    n = st.cfg[EJ_VCS]
    stalls = st.cfg[STALLS] != 0
    cycle = sc[CYCLE]
    active = False
    lists = st.cfg[LISTS] != 0
    listed = sc[N_TAKING]
    # the list as the last cycle left it is in order; the attachments added since, behind it
    _sort(taking, sc[N_SORTED], listed)
    _merge(taking, sc[N_SORTED], listed, st.merged)
    kept = 0
    for i in range(listed if lists else gas.shape[0]):
        g = taking[i] if lists else i
        if gas[g, GA_CNT] == 0:
            gas[g, GA_LISTED] = 0
            continue
        if lists:
            taking[kept] = g
            kept += 1
        vc = gas[g, PRESENTING]
        if vc < 0:
            for k in range(n):
                vc = (gas[g, EJECT_PTR] + k) % n
                if rbs[g * n + vc, RB_CNT] > 0:
                    break
            gas[g, PRESENTING] = vc
            gas[g, EJECT_PTR] = (vc + 1) % n
        b = g * n + vc
        if rbs[b, RB_CNT] == 0:
            continue  # the presented packet's next flit is still on its way
        active = True
        flit = rb[b * depth + rbs[b, RB_HEAD]]
        endpoint = gas[g, GA_EP]
        if stalls and not _hidden(pks, flit):
            if not _ready(st.stall, endpoint, gas[g, GA_WHICH], cycle):
                continue
        rbs[b, RB_HEAD] = (rbs[b, RB_HEAD] + 1) % depth
        rbs[b, RB_CNT] -= 1
        gas[g, GA_CNT] -= 1
        if _is_tail(pks, flit):
            gas[g, PRESENTING] = -1
        ov = gas[g, GA_OV0] + vc
        ovs[ov, CREDIT] += 1
        if lists and _credit_may_change(st, ov):
            _wake(sws, stepping, stepping_n, ovs[ov, OV_SW], cycle + 1)
        _deliver(st, endpoint, flit)
    sc[N_TAKING] = kept
    sc[N_SORTED] = kept
    return active


@compiled(inline="always")
def _front_may_change(st, iv: int, held: int) -> bool:
    """Whether a flit landing in input VC ``iv``, which held ``held`` flits, may change what its
    switch does: it becomes the front, or the front is a head not yet routed that was short of
    the flits it needs (its head flits, under store-and-forward its whole packet). Behind any
    other front it changes nothing step 1 or 2 reads, so its switch is not stepped for it, nor
    its front looked up."""
    ivs = st.iv
    if held == 0:
        return True
    if ivs[iv, ASSIGN] >= 0 or ivs[iv, DECISION] >= 0:
        return False
    slot = _at(st.buf, ivs, iv, 0, st.cfg[DEPTH]) >> 16
    return held < st.pk[slot, PK_COUNT if st.cfg[STORES] else PK_HF]


#: how many landings ahead :func:`_end_of_cycle` asks for the row a landing will write (the
#: input VC's of a flit, the output VC's of a credit)
PREFETCH_LANDINGS_AHEAD = 8


@compiled
def _end_of_cycle(st) -> bool:
    """Flits on the wires land, users take flits, credits land; the wires' phases swap.
    Whether a user took a flit or held a presented one back."""
    ivs, ovs, sws, pks, rbs, gas, buf, rb, sc = (
        st.iv,
        st.ov,
        st.sw,
        st.pk,
        st.rbs,
        st.ga,
        st.buf,
        st.rb,
        st.sc,
    )
    wf, wf_n, wc, wc_n, credits = st.wf, st.wf_n, st.wc, st.wc_n, st.inj_credit
    stepping, stepping_n, taking = st.stepping, st.stepping_n, st.taking
    depth = st.cfg[DEPTH]
    n_ej, n_inj = st.cfg[EJ_VCS], st.cfg[INJ_VCS]
    checks = st.cfg[CHECKS] != 0
    lists = st.cfg[LISTS] != 0
    landing = sc[PHASE]
    woken = sc[CYCLE] + 1
    ahead = PREFETCH_LANDINGS_AHEAD
    for k in range(wf_n[landing]):
        if k + ahead < wf_n[landing] and wf[landing, k + ahead, WF_KIND] <= INJECTION:
            prefetch(ivs, wf[landing, k + ahead, WF_TARGET])
        kind = wf[landing, k, WF_KIND]
        target = wf[landing, k, WF_TARGET]
        flit = wf[landing, k, WF_FLIT]
        if kind == BYPASSED:
            continue
        if kind == EJECTION:
            if checks and rbs[target, RB_CNT] >= depth:
                _fail(sc, RECEIVE_OVER, target)
                continue
            rb[target * depth + (rbs[target, RB_HEAD] + rbs[target, RB_CNT]) % depth] = flit
            rbs[target, RB_CNT] += 1
            g = target // n_ej
            gas[g, GA_CNT] += 1
            if lists and not gas[g, GA_LISTED]:
                gas[g, GA_LISTED] = 1
                taking[sc[N_TAKING]] = g
                sc[N_TAKING] += 1
            continue
        if kind == LINK and flit & 0xFFFF == 0:
            pks[flit >> 16, PK_HOPS] += 1
        if checks and ivs[target, IV_CNT] >= depth:
            _fail(sc, FIFO_OVER, target)
            continue
        held = ivs[target, IV_CNT]
        buf[target * depth + (ivs[target, IV_HEAD] + held) % depth] = flit
        ivs[target, IV_CNT] = held + 1
        sws[ivs[target, IV_SW], SW_CNT] += 1
        sc[BUSY] += 1
        if _front_may_change(st, target, held):
            _list_front(ivs, st.fronts, st.fronts_n, target, woken)
            if lists:
                _wake(sws, stepping, stepping_n, ivs[target, IV_SW], woken)
    user = _take(st)
    for k in range(wc_n[landing]):
        if k + ahead < wc_n[landing] and wc[landing, k + ahead] >= 0:
            prefetch(ovs, wc[landing, k + ahead])
        target = wc[landing, k]
        if target < 0:
            credits[-1 - target] += 1
            st.ep_wait[gas[(-1 - target) // n_inj, GA_EP]] = 0
            continue
        ovs[target, CREDIT] += 1
        if lists and _credit_may_change(st, target):
            _wake(sws, stepping, stepping_n, ovs[target, OV_SW], woken)
        if checks and ovs[target, CREDIT] > depth:
            _fail(sc, CREDIT_OVER, target)
    wf_n[landing] = 0
    wc_n[landing] = 0
    sc[PHASE] = 1 - landing
    return user


# ---- the invariants' check at the end of a run --------------------------------------------------


@compiled
def unconserved_credit(st, injecting, to_iv, to_rb, to_ov, to_inj):
    """The first VC whose credits, buffered flits, flits on the wires and credits on their way
    back do not add up to the buffer depth: (0, output VC, sum) on a link, (1, output VC, sum)
    at an ejection, (2, input VC, sum) at an injection, or (-1, 0, 0). ``injecting``: per
    attachment, whether it injects; ``to_*``: zeroed counts, one per input VC, receive buffer,
    output VC and injection VC."""
    depth, n_inj = st.cfg[DEPTH], st.cfg[INJ_VCS]
    ovs, ivs, wf, wc = st.ov, st.iv, st.wf, st.wc
    for phase in range(2):
        for k in range(st.wf_n[phase]):
            kind, target = wf[phase, k, WF_KIND], wf[phase, k, WF_TARGET]
            if kind == LINK or kind == INJECTION:
                to_iv[target] += 1
            elif kind == EJECTION:
                to_rb[target] += 1
        for k in range(st.wc_n[phase]):
            if wc[phase, k] >= 0:
                to_ov[wc[phase, k]] += 1
            else:
                to_inj[-1 - wc[phase, k]] += 1
    for ov in range(ovs.shape[0]):
        dst = ovs[ov, OV_DST]
        if dst >= 0:
            total = ovs[ov, CREDIT] + ivs[dst, IV_CNT] + to_iv[dst] + to_ov[ov]
            if total != depth:
                return 0, ov, total
        elif -1 - dst < st.rbs.shape[0]:
            total = ovs[ov, CREDIT] + st.rbs[-1 - dst, RB_CNT] + to_rb[-1 - dst]
            if total != depth:
                return 1, ov, total
    for ga in range(st.ga.shape[0]):
        if injecting[ga]:
            for v in range(n_inj):
                iv = st.ga[ga, GA_IV0] + v
                total = st.inj_credit[ga * n_inj + v] + to_inj[ga * n_inj + v]
                total += ivs[iv, IV_CNT] + to_iv[iv]
                if total != depth:
                    return 2, iv, total
    return -1, 0, 0


# ---- the deadlock watch's look ----------------------------------------------------------------


@compiled
def front_codes(st, ivs_out: np.ndarray, codes_out: np.ndarray) -> int:
    """The front flit of every non-empty input VC, into ``ivs_out`` (in input VC order) and
    ``codes_out``; how many. A switch holding no flit is passed over whole: the watch looks
    every few hundred cycles, and on a large fabric most rows it would read are empty."""
    sws, gps, ivs, buf = st.sw, st.gp, st.iv, st.buf
    depth = st.cfg[DEPTH]
    n = 0
    for s in range(sws.shape[0]):
        if sws[s, SW_CNT] == 0:
            continue
        first, last = sws[s, SW_PORT0], sws[s, SW_PORT0] + sws[s, SW_NPORTS] - 1
        for iv in range(gps[first, GP_IV0], gps[last, GP_IV0] + gps[last, GP_NIV]):
            if ivs[iv, IV_CNT] > 0:
                ivs_out[n] = iv
                codes_out[n] = _at(buf, ivs, iv, 0, depth)
                n += 1
    return n


# ---- whole cycles ----------------------------------------------------------------------------


@compiled(inline="always")
def _prefetch_ports(st, s: int) -> None:
    """Ask for switch ``s``'s port rows: listed switches lie far apart in the tables, where the
    processor's own prefetching does not reach, and a step would wait on each row."""
    base = st.sw[s, SW_PORT0]
    for gp in range(base, base + st.sw[s, SW_NPORTS]):
        prefetch(st.gp, gp)


@compiled(inline="always")
def _prefetch_vcs(st, s: int) -> None:
    """Ask for switch ``s``'s input and output VC rows (its port rows asked for a step before:
    they say where its VCs are)."""
    first, last = st.sw[s, SW_PORT0], st.sw[s, SW_PORT0] + st.sw[s, SW_NPORTS] - 1
    gps = st.gp
    for iv in range(gps[first, GP_IV0], gps[last, GP_IV0] + gps[last, GP_NIV]):
        prefetch(st.iv, iv)
    for ov in range(gps[first, GP_OV0], gps[last, GP_OV0] + gps[last, GP_NOV]):
        prefetch(st.ov, ov)


@compiled
def _step(st) -> None:
    """One cycle, its decisions all in the table (:func:`_lookups` found no miss)."""
    sws, sc, stepping, stepping_n = st.sw, st.sc, st.stepping, st.stepping_n
    now, woken, lists = sc[CYCLE] & 1, sc[CYCLE] + 1, st.cfg[LISTS] != 0
    stepping_n[1 - now] = 0
    st.fronts_n[1 - now] = 0
    moved = _inject(st)
    listed = stepping_n[now]
    for i in range(listed if lists else sws.shape[0]):
        s = stepping[now, i] if lists else i
        if lists:  # the rows of the switches two and one ahead, asked for while this one steps
            if i + 2 < listed:
                _prefetch_ports(st, stepping[now, i + 2])
            if i + 1 < listed:
                _prefetch_vcs(st, stepping[now, i + 1])
        if sws[s, SW_CNT] > 0 and _switch_cycle(st, s):
            moved = True
            # holding no flit, its next step would do nothing: a flit landing steps it again
            if lists and sws[s, SW_CNT] > 0:
                _wake(sws, stepping, stepping_n, s, woken)
    if st.cfg[BYPASS]:
        _bypass(st)
    landing = sc[PHASE]
    # flits or credits on the wires this cycle land at its end: that is activity too
    if st.wf_n[landing] > 0 or st.wc_n[landing] > 0:
        moved = True
    # a flit taken, or one presented to a user who holds ready low: never a deadlock
    if _end_of_cycle(st):
        moved = True
    sc[QUIET] = 0 if moved else sc[QUIET] + 1
    sc[CYCLE] += 1


@compiled
def run(st, until: int, settle_after: int) -> int:
    """Cycles until ``until``, or until Python must act first (the status says why): a miss
    (nothing of that cycle done), the fabric stuck, a cycle the deadlock watch looks at, every
    watched packet delivered from ``settle_after`` on (-1: never), logs that could overflow in
    one more cycle, a broken invariant."""
    sc = st.sc
    every = st.cfg[WATCH_EVERY]
    room_deliveries = st.dl.shape[0] - st.ga.shape[0]
    room_paths = st.pl.shape[0] - st.ov.shape[0]
    while sc[CYCLE] < until:
        if sc[N_DELIVERED_LOG] > room_deliveries or sc[N_PATH_LOG] > room_paths:
            return LOGS
        if _lookups(st) > 0:
            return MISS
        _step(st)
        if sc[ERROR] != 0:
            return INVARIANT
        cycle = sc[CYCLE]
        if sc[QUIET] > 0 and sc[BUSY] > 0:
            return STUCK
        if cycle % every == 0:
            return WATCH
        if settle_after >= 0 and cycle >= settle_after and sc[WATCHED] == 0:
            return SETTLED
    return UNTIL
