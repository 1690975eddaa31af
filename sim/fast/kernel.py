"""The compiled cycle of :class:`~zfabric.sim.fast.FastModel`: docs/microarchitecture.md on flat
integer arrays, one function per step of the contract, compiled by numba (and plain Python with
``NUMBA_DISABLE_JIT=1``, for debugging).

Indices: a switch's ports are numbered globally (``gp``), each input VC (``iv``) and output VC
(``ov``) too; an endpoint attachment (``ga``) has ``N`` injection credits and ``E`` receive
buffers (``rb = ga * E + w``). A FIFO is a ring of ``B`` flit codes, ``slot << 16 | index``:
the packet's slot in the ``pk_*`` arrays and the flit's index in its packet. Wires hold two
phases: what is sent in this cycle, and what was sent in the previous one and lands at its end.

:func:`run` advances whole cycles until it must hand back to Python: a routing decision
missing from the table (looked up before the cycle starts, so nothing of the cycle is done
yet), a cycle the caller must see (``until``, a deadlock check, the measured packets all
delivered), a full log, or a broken invariant.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

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
    EMPTY_ADAPTIVE,
    CFG_SIZE,
) = range(17)

FIRST_FREE, ROUND_ROBIN, OCCUPANCY = range(3)

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
    SC_SIZE,
) = range(13)

#: every array of the engine's state, in one tuple the compiled functions take whole
State = namedtuple(
    "State",
    [
        # the fabric: switches, ports, input and output VCs, attachments
        "sw_port0",
        "sw_nports",
        "port_iv0",
        "port_niv",
        "port_ov0",
        "port_nov",
        "iv_sw",
        "iv_gp",
        "iv_credit",
        "ov_gp",
        "ov_local",
        "ov_vc",
        "ov_dst",
        "ov_level",
        "ov_adaptive",
        "ep_att0",
        "ga_ep",
        "ga_which",
        "ga_iv0",
        "ga_ov0",
        # switch state
        "buf",
        "buf_head",
        "buf_cnt",
        "assign",
        "decision",
        "pending",
        "owner",
        "credit",
        "rr_in",
        "rr_out",
        "va_in",
        "va_out",
        "rr_sel",
        "staged_v",
        "staged_ov",
        "vstaged_v",
        "vstaged_ov",
        "sw_cnt",
        # per-switch scratch: requests per input VC, allocation per port, grants
        "req",
        "vreq",
        "matched_in",
        "matched_out",
        "pick_v",
        "pick_o",
        "best",
        "best_d",
        "g_gp",
        "g_v",
        "g_ov",
        "a_gp",
        "a_v",
        "a_ov",
        # endpoints
        "ep_slot",
        "ep_next",
        "ep_which",
        "ep_vc",
        "ep_ptr",
        "ep_qhead",
        "ep_qtail",
        "inj_credit",
        "rb",
        "rb_head",
        "rb_cnt",
        "ga_cnt",
        "presenting",
        "eject_ptr",
        # packets, by slot
        "pk_id",
        "pk_src",
        "pk_dst",
        "pk_len",
        "pk_created",
        "pk_injected",
        "pk_delivered",
        "pk_hops",
        "pk_done",
        "pk_pair",
        "pk_watched",
        "pk_qnext",
        "pk_count",
        "pk_hf0",
        "pk_hf",
        "pk_head",
        "pk_htail",
        # wires: [phase, entry]; kind 0 a link into an input VC, 1 an injection, 2 an ejection
        "wf_kind",
        "wf_target",
        "wf_flit",
        "wf_n",
        "wc_target",
        "wc_n",
        # logs Python reads back
        "dl_slot",
        "pl_slot",
        "pl_sw",
        "pl_port",
        "ms_iv",
        "ms_head",
        # the routing tables: decisions, raw state -> decision hash, injections
        "dec_start",
        "dec_n",
        "cand_ov",
        "cand_port",
        "cand_vc",
        "dec_next_head",
        "dec_next_hf",
        "hash_keys",
        "hash_vals",
        "inj_start",
        "inj_n",
        "inj_which",
        "inj_head",
        "inj_hf",
        # settings and scalars; the ejection stalls' hash base and threshold
        "cfg",
        "sc",
        "stall",
    ],
)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def hash_slot(keys: np.ndarray, key: int) -> int:
    """The slot of ``key`` in the open-addressed table ``keys``, or of the empty slot where it
    would go (linear probing; the table is never full)."""
    mask = keys.shape[0] - 1
    h = int((np.uint64(key) * _GOLDEN) >> np.uint64(20)) & mask
    while keys[h] != -1 and keys[h] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def hash_insert(keys: np.ndarray, vals: np.ndarray, key: int, val: int) -> None:
    h = hash_slot(keys, key)
    keys[h] = key
    vals[h] = val


@njit(cache=True)
def hash_rehash(keys: np.ndarray, vals: np.ndarray, new_keys: np.ndarray, new_vals: np.ndarray):
    for h in range(keys.shape[0]):
        if keys[h] != -1:
            hash_insert(new_keys, new_vals, keys[h], vals[h])


@njit(cache=True)
def push_packets(st, slots, ids, srcs, dsts, lengths, created, pairs, watched) -> None:
    """Queue offered packets at their sources, in order."""
    for k in range(slots.shape[0]):
        slot = slots[k]
        st.pk_id[slot] = ids[k]
        st.pk_src[slot] = srcs[k]
        st.pk_dst[slot] = dsts[k]
        st.pk_len[slot] = lengths[k]
        st.pk_created[slot] = created[k]
        st.pk_injected[slot] = -1
        st.pk_delivered[slot] = -1
        st.pk_hops[slot] = 0
        st.pk_done[slot] = 0
        st.pk_pair[slot] = pairs[k]
        st.pk_watched[slot] = watched[k]
        st.pk_qnext[slot] = -1
        st.pk_htail[slot] = 0
        if watched[k]:
            st.sc[WATCHED] += 1
        src = srcs[k]
        if st.ep_qtail[src] < 0:
            st.ep_qhead[src] = slot
        else:
            st.pk_qnext[st.ep_qtail[src]] = slot
        st.ep_qtail[src] = slot


# ---- flits ---------------------------------------------------------------------------------


@njit(cache=True)
def _is_tail(st, flit: int) -> bool:
    slot, index = flit >> 16, flit & 0xFFFF
    return index == st.pk_count[slot] - 1 or (index == 0 and st.pk_htail[slot] != 0)


@njit(cache=True)
def _hidden(st, flit: int) -> bool:
    """Taken by the endpoint whatever ``ready``: the first flit while it heads several, every
    head flit behind it but the last."""
    slot, index = flit >> 16, flit & 0xFFFF
    if index == 0:
        return st.pk_hf[slot] > 1
    return index < st.pk_hf0[slot] - 1


@njit(cache=True)
def _front(st, iv: int) -> int:
    return st.buf[iv * st.cfg[DEPTH] + st.buf_head[iv]]


@njit(cache=True)
def _at(st, iv: int, k: int) -> int:
    depth = st.cfg[DEPTH]
    return st.buf[iv * depth + (st.buf_head[iv] + k) % depth]


@njit(cache=True)
def _pop(st, iv: int) -> int:
    depth = st.cfg[DEPTH]
    flit = st.buf[iv * depth + st.buf_head[iv]]
    st.buf_head[iv] = (st.buf_head[iv] + 1) % depth
    st.buf_cnt[iv] -= 1
    st.sw_cnt[st.iv_sw[iv]] -= 1
    st.sc[BUSY] -= 1
    return flit


@njit(cache=True)
def _send_credit(st, iv: int) -> None:
    sent = 1 - st.sc[PHASE]
    st.wc_target[sent, st.wc_n[sent]] = st.iv_credit[iv]
    st.wc_n[sent] += 1


@njit(cache=True)
def _send_flit(st, kind: int, target: int, flit: int) -> None:
    sent = 1 - st.sc[PHASE]
    n = st.wf_n[sent]
    st.wf_kind[sent, n] = kind
    st.wf_target[sent, n] = target
    st.wf_flit[sent, n] = flit
    st.wf_n[sent] = n + 1


@njit(cache=True)
def _fail(st, error: int, at: int) -> None:
    if st.sc[ERROR] == 0:
        st.sc[ERROR] = error
        st.sc[ERROR_AT] = at


# ---- routing table ------------------------------------------------------------------------


@njit(cache=True)
def _lookups(st) -> int:
    """Before a cycle: the decision of every head that step 1 may route in it, into
    ``pending``; the misses into the miss log. Returns the misses."""
    misses = 0
    n_iv = st.cfg[N_IV]
    for s in range(st.sw_port0.shape[0]):
        if st.sw_cnt[s] == 0:
            continue
        first = st.port_iv0[st.sw_port0[s]]
        last_gp = st.sw_port0[s] + st.sw_nports[s] - 1
        end = st.port_iv0[last_gp] + st.port_niv[last_gp]
        for iv in range(first, end):
            if st.buf_cnt[iv] == 0 or st.assign[iv] >= 0 or st.decision[iv] >= 0:
                continue
            slot = _front(st, iv) >> 16
            if st.buf_cnt[iv] < st.pk_hf[slot]:
                continue
            key = st.pk_head[slot] * n_iv + iv
            h = hash_slot(st.hash_keys, key)
            if st.hash_keys[h] == key:
                st.pending[iv] = st.hash_vals[h]
            else:
                st.ms_iv[misses] = iv
                st.ms_head[misses] = st.pk_head[slot]
                misses += 1
    st.sc[N_MISS] = misses
    return misses


# ---- endpoints: injection ------------------------------------------------------------------


@njit(cache=True)
def _start(st, e: int, slot: int) -> bool:
    """A head's (attachment, VC): the first with a credit, the injection choices in order and
    the VCs from the injection pointer."""
    n = st.cfg[INJ_VCS]
    pair = st.pk_pair[slot]
    for c in range(st.inj_start[pair], st.inj_start[pair] + st.inj_n[pair]):
        ga = st.ep_att0[e] + st.inj_which[c]
        for k in range(n):
            vc = (st.ep_ptr[e] + k) % n
            if st.inj_credit[ga * n + vc] > 0:
                st.ep_qhead[e] = st.pk_qnext[slot]
                if st.ep_qhead[e] < 0:
                    st.ep_qtail[e] = -1
                st.ep_which[e] = st.inj_which[c]
                st.ep_vc[e] = vc
                st.ep_ptr[e] = (vc + 1) % n
                heads = st.inj_hf[c]
                st.pk_hf0[slot] = heads
                st.pk_hf[slot] = heads
                st.pk_count[slot] = st.pk_len[slot] + heads - 1
                st.pk_head[slot] = st.inj_head[c]
                st.pk_injected[slot] = st.sc[CYCLE]
                st.ep_slot[e] = slot
                st.ep_next[e] = 0
                return True
    return False


@njit(cache=True)
def _inject(st) -> bool:
    moved = False
    n = st.cfg[INJ_VCS]
    for e in range(st.ep_slot.shape[0]):
        slot = st.ep_slot[e]
        if slot < 0:
            slot = st.ep_qhead[e]
            if slot < 0 or st.pk_created[slot] > st.sc[CYCLE] or not _start(st, e, slot):
                continue
        ga = st.ep_att0[e] + st.ep_which[e]
        vc = st.ep_vc[e]
        if st.inj_credit[ga * n + vc] == 0:
            continue
        st.inj_credit[ga * n + vc] -= 1
        index = st.ep_next[e]
        st.ep_next[e] = index + 1
        if index + 1 == st.pk_count[slot]:
            st.ep_slot[e] = -1
        _send_flit(st, 1, st.ga_iv0[ga] + vc, slot << 16 | index)
        st.sc[IN_NETWORK] += 1
        moved = True
    return moved


# ---- one switch ------------------------------------------------------------------------------


@njit(cache=True)
def _select(st, s: int, gp: int, iv: int) -> int:
    """Step 2 for a head: the output VC it requests among its free candidates (with a credit
    unless VC allocation is a stage of its own), or -1. Routes it first (step 1) if it has no
    decision yet; with a route stage of its own that is all it does this cycle (-2)."""
    if st.decision[iv] < 0:
        st.decision[iv] = st.pending[iv]
        if st.cfg[ROUTE_STAGE]:
            return -2
    d = st.decision[iv]
    vc_stage = st.cfg[VC_STAGE] != 0
    selection = st.cfg[SELECTION]
    depth = st.cfg[DEPTH]
    n_ports = st.sw_nports[s]
    pointer = st.rr_sel[gp]
    best = -1
    best_key = 0
    for c in range(st.dec_start[d], st.dec_start[d] + st.dec_n[d]):
        ov = st.cand_ov[c]
        if st.owner[ov] >= 0:
            continue
        credit = st.credit[ov]
        if not vc_stage and credit <= 0:
            continue
        if st.cfg[EMPTY_ADAPTIVE] and st.ov_adaptive[ov] and credit != depth:
            continue
        if selection == FIRST_FREE:
            return ov
        distance = st.cand_port[c] - pointer
        if distance < 0:
            distance += n_ports
        key = distance * 64 + st.cand_vc[c]
        if selection == OCCUPANCY:
            high = 1 if credit < st.cfg[LOW] else 0
            key += (st.ov_level[ov] * 2 + high) * n_ports * 64
        if best < 0 or key < best_key:
            best = ov
            best_key = key
    return best


@njit(cache=True)
def _allocate(st, s: int, req: np.ndarray, rr_in: np.ndarray, rr_out: np.ndarray, g_gp, g_v, g_ov):
    """Steps 3 and 4 on the requests ``req`` (an output VC or -1 per input VC) and the pointers
    ``rr_in`` and ``rr_out``, once per iteration: the grants into ``g_*``, their count back."""
    base = st.sw_port0[s]
    n_ports = st.sw_nports[s]
    for p in range(n_ports):
        st.matched_in[p] = 0
        st.matched_out[p] = 0
    granted = 0
    for _ in range(st.cfg[ITERATIONS]):
        for o in range(n_ports):
            st.best[o] = -1
        picked = False
        for p in range(n_ports):
            st.pick_v[p] = -1
            if st.matched_in[p]:
                continue
            gp = base + p
            n = st.port_niv[gp]
            iv0 = st.port_iv0[gp]
            for k in range(n):
                v = (rr_in[gp] + k) % n
                target = req[iv0 + v]
                if target < 0:
                    continue
                o = st.ov_local[target]
                if st.matched_out[o]:
                    continue
                st.pick_v[p] = v
                st.pick_o[p] = o
                distance = p - rr_out[base + o]
                if distance < 0:
                    distance += n_ports
                if st.best[o] < 0 or distance < st.best_d[o]:
                    st.best[o] = p
                    st.best_d[o] = distance
                picked = True
                break
        if not picked:
            break
        for o in range(n_ports):
            p = st.best[o]
            if p < 0:
                continue
            v = st.pick_v[p]
            g_gp[granted] = base + p
            g_v[granted] = v
            g_ov[granted] = req[st.port_iv0[base + p] + v]
            granted += 1
            st.matched_in[p] = 1
            st.matched_out[o] = 1
    return granted


@njit(cache=True)
def _leaving(st, iv: int):
    """Flits the front of input VC ``iv`` takes out of its FIFO when it crosses (a routed head:
    itself and the surplus head flits behind it), and whether they end the packet."""
    front = _front(st, iv)
    slot, index = front >> 16, front & 0xFFFF
    if index != 0 or st.pk_hf[slot] == 1:
        return 1, _is_tail(st, front)
    leaving = 1 + st.pk_hf[slot] - st.dec_next_hf[st.decision[iv]]
    tail = False
    for k in range(leaving):
        tail = tail or _is_tail(st, _at(st, iv, k))
    return leaving, tail


@njit(cache=True)
def _stage_picks(st, s: int) -> bool:
    """Stages 4 and 5, switch allocation's input stage: per input port, the first requesting VC
    at or after its pointer that still requests if the port's staged pick crosses now; it
    becomes the staged pick and the pointer moves past it. The requests become last cycle's
    staged picks, which the output stage grants or drops. Whether some port picked."""
    any_pick = False
    for gp in range(st.sw_port0[s], st.sw_port0[s] + st.sw_nports[s]):
        n = st.port_niv[gp]
        iv0 = st.port_iv0[gp]
        staged = st.staged_v[gp]
        excluded = -1
        if staged >= 0:
            leaving, tail = _leaving(st, iv0 + staged)
            if st.buf_cnt[iv0 + staged] <= leaving or st.credit[st.staged_ov[gp]] < 2 or tail:
                excluded = staged
        pick = -1
        for k in range(n):
            v = (st.rr_in[gp] + k) % n
            if v != excluded and st.req[iv0 + v] >= 0:
                pick = v
                break
        pick_ov = -1
        if pick >= 0:
            st.rr_in[gp] = (pick + 1) % n
            pick_ov = st.req[iv0 + pick]
            any_pick = True
        for v in range(n):
            st.req[iv0 + v] = -1
        if staged >= 0:
            st.req[iv0 + staged] = st.staged_ov[gp]
        st.staged_v[gp] = pick
        st.staged_ov[gp] = pick_ov
    return any_pick


@njit(cache=True)
def _vc_stage_picks(st, s: int) -> bool:
    """Stage 5, VC allocation's input stage: per input port, the first head requesting an
    output VC at or after its VC-allocation pointer, other than last cycle's staged head; the
    requests become last cycle's staged heads. Whether some port picked or had one staged."""
    any_pick = False
    for gp in range(st.sw_port0[s], st.sw_port0[s] + st.sw_nports[s]):
        n = st.port_niv[gp]
        iv0 = st.port_iv0[gp]
        staged = st.vstaged_v[gp]
        pick = -1
        for k in range(n):
            v = (st.va_in[gp] + k) % n
            if v != staged and st.vreq[iv0 + v] >= 0:
                pick = v
                break
        pick_ov = -1
        if pick >= 0:
            st.va_in[gp] = (pick + 1) % n
            pick_ov = st.vreq[iv0 + pick]
            any_pick = True
        for v in range(n):
            st.vreq[iv0 + v] = -1
        if staged >= 0:
            st.vreq[iv0 + staged] = st.vstaged_ov[gp]
            any_pick = True
        st.vstaged_v[gp] = pick
        st.vstaged_ov[gp] = pick_ov
    return any_pick


@njit(cache=True)
def _drop_surplus(st, iv: int, slot: int) -> None:
    """A crossing head takes out of its FIFO the head flits its next head no longer needs,
    returning their credits with its own; if they held the tail, the head ends the packet."""
    heads = st.pk_hf[slot]
    if heads == 1:
        return
    keep = st.dec_next_hf[st.decision[iv]]
    for _ in range(heads - keep):
        dropped = _pop(st, iv)
        index = dropped & 0xFFFF
        if st.cfg[CHECKS] and ((dropped >> 16) != slot or not 0 < index < st.pk_hf0[slot]):
            _fail(st, np.int64(SURPLUS), slot)
        if _is_tail(st, dropped):
            st.pk_htail[slot] = 1
        _send_credit(st, iv)
        st.sc[IN_NETWORK] -= 1
    st.pk_hf[slot] = keep


@njit(cache=True)
def _switch_cycle(st, s: int) -> bool:
    """Steps 1 to 5 at switch ``s`` (with the VC allocation and split stages of ``stages`` 3
    to 5); whether anything happened (a flit moved, a head was routed, acquired or staged)."""
    cfg = st.cfg
    vc_stage = cfg[VC_STAGE] != 0
    base = st.sw_port0[s]
    n_ports = st.sw_nports[s]
    routed = False
    for gp in range(base, base + n_ports):
        iv0 = st.port_iv0[gp]
        for iv in range(iv0, iv0 + st.port_niv[gp]):
            st.req[iv] = -1
            st.vreq[iv] = -1
            if st.buf_cnt[iv] == 0:
                continue
            target = st.assign[iv]
            if target < 0:
                slot = _front(st, iv) >> 16
                if st.decision[iv] >= 0 or st.buf_cnt[iv] >= st.pk_hf[slot]:
                    target = _select(st, s, gp, iv)
                    if target == -2:
                        routed = True
                        target = -1
                if vc_stage:
                    st.vreq[iv] = target
                    continue
            elif st.credit[target] == 0:
                target = -1
            st.req[iv] = target
    staged = False
    if cfg[SPLIT]:
        staged = _stage_picks(st, s)
    granted = _allocate(st, s, st.req, st.rr_in, st.rr_out, st.g_gp, st.g_v, st.g_ov)
    acquired = 0
    if cfg[VC_SPLIT]:
        staged = _vc_stage_picks(st, s) or staged
    if vc_stage:
        won = _allocate(st, s, st.vreq, st.va_in, st.va_out, st.a_gp, st.a_v, st.a_ov)
        for k in range(won):
            gp, v, ov = st.a_gp[k], st.a_v[k], st.a_ov[k]
            p, o = gp - base, st.ov_local[ov]
            if cfg[VC_SPLIT]:
                # the VC output stage's grant moves its pointer, but takes the output VC only
                # if it is still free: another head may have acquired it last cycle
                st.va_out[base + o] = (p + 1) % n_ports
                if st.owner[ov] >= 0:
                    continue
                if cfg[EMPTY_ADAPTIVE] and st.ov_adaptive[ov] and st.credit[ov] != cfg[DEPTH]:
                    continue
            iv = st.port_iv0[gp] + v
            st.assign[iv] = ov
            st.owner[ov] = iv
            st.rr_sel[gp] = (o + 1) % n_ports
            if not cfg[VC_SPLIT]:
                st.va_in[gp] = (v + 1) % st.port_niv[gp]
            st.va_out[base + o] = (p + 1) % n_ports
            acquired += 1
    if granted == 0:
        return routed or acquired > 0 or staged
    for k in range(granted):
        gp, v, ov = st.g_gp[k], st.g_v[k], st.g_ov[k]
        p, o = gp - base, st.ov_local[ov]
        iv = st.port_iv0[gp] + v
        flit = _pop(st, iv)
        slot = flit >> 16
        st.credit[ov] -= 1
        if flit & 0xFFFF == 0:
            _drop_surplus(st, iv, slot)
            if not vc_stage:
                st.assign[iv] = ov
                st.owner[ov] = iv
                st.rr_sel[gp] = (o + 1) % n_ports
            st.pk_head[slot] = st.dec_next_head[st.decision[iv]]
            st.decision[iv] = -1
            if cfg[PATHS]:
                n = st.sc[N_PATH_LOG]
                st.pl_slot[n] = slot
                st.pl_sw[n] = s
                st.pl_port[n] = o
                st.sc[N_PATH_LOG] = n + 1
        if _is_tail(st, flit):
            st.assign[iv] = -1
            st.owner[ov] = -1
        if not cfg[SPLIT]:
            st.rr_in[gp] = (v + 1) % st.port_niv[gp]
        st.rr_out[base + o] = (p + 1) % n_ports
        target = st.ov_dst[ov]
        if target >= 0:
            _send_flit(st, 0, target, flit)
        else:
            _send_flit(st, 2, -1 - target, flit)
        _send_credit(st, iv)
    return True


# ---- end of the cycle: links land, users take flits ------------------------------------------


@njit(cache=True)
def _mix64(x):
    """splitmix64's finaliser (as ``zfabric.sim.model.EjectStalls``)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def _ready(st, endpoint: int, which: int, cycle: int) -> bool:
    x = st.stall[0]
    x ^= np.uint64(endpoint) << np.uint64(40)
    x ^= np.uint64(which) << np.uint64(32)
    x ^= np.uint64(cycle)
    return (_mix64(x) >> np.uint64(32)) >= st.stall[1]


@njit(cache=True)
def _deliver(st, endpoint: int, flit: int) -> None:
    slot, index = flit >> 16, flit & 0xFFFF
    carries = index == 0 or index >= st.pk_hf0[slot]  # a head flit behind the first: stripped
    if st.cfg[CHECKS]:
        if endpoint != st.pk_dst[slot]:
            _fail(st, np.int64(WRONG_ENDPOINT), slot)
        if carries and max(0, index - st.pk_hf0[slot] + 1) != st.pk_done[slot]:
            _fail(st, np.int64(OUT_OF_ORDER), slot)
    if carries:
        st.pk_done[slot] += 1
    st.sc[IN_NETWORK] -= 1
    if _is_tail(st, flit):
        st.pk_delivered[slot] = st.sc[CYCLE]
        st.sc[DELIVERED] += 1
        st.dl_slot[st.sc[N_DELIVERED_LOG]] = slot
        st.sc[N_DELIVERED_LOG] += 1
        if st.pk_watched[slot]:
            st.sc[WATCHED] -= 1


@njit(cache=True)
def _take(st) -> bool:
    """Each attachment presents the front of its presented ejection VC (choosing one from its
    ejection pointer when it has none); the user takes it when ``ready`` (a hidden head flit
    whatever ``ready``), and its credit is back at the local output next cycle. Whether a flit
    was taken or presented."""
    depth = st.cfg[DEPTH]
    n = st.cfg[EJ_VCS]
    active = False
    for ga in range(st.ga_cnt.shape[0]):
        if st.ga_cnt[ga] == 0:
            continue
        vc = st.presenting[ga]
        if vc < 0:
            for k in range(n):
                vc = (st.eject_ptr[ga] + k) % n
                if st.rb_cnt[ga * n + vc] > 0:
                    break
            st.presenting[ga] = vc
            st.eject_ptr[ga] = (vc + 1) % n
        rb = ga * n + vc
        if st.rb_cnt[rb] == 0:
            continue  # the presented packet's next flit is still on its way
        active = True
        flit = st.rb[rb * depth + st.rb_head[rb]]
        endpoint = st.ga_ep[ga]
        if st.cfg[STALLS] and not _hidden(st, flit):
            if not _ready(st, endpoint, st.ga_which[ga], st.sc[CYCLE]):
                continue
        st.rb_head[rb] = (st.rb_head[rb] + 1) % depth
        st.rb_cnt[rb] -= 1
        st.ga_cnt[ga] -= 1
        if _is_tail(st, flit):
            st.presenting[ga] = -1
        st.credit[st.ga_ov0[ga] + vc] += 1
        _deliver(st, endpoint, flit)
    return active


@njit(cache=True)
def _end_of_cycle(st) -> bool:
    """Flits on the wires land, users take flits, credits land; the wires' phases swap."""
    depth = st.cfg[DEPTH]
    n_ej = st.cfg[EJ_VCS]
    landing = st.sc[PHASE]
    checks = st.cfg[CHECKS]
    for k in range(st.wf_n[landing]):
        kind, target, flit = (
            st.wf_kind[landing, k],
            st.wf_target[landing, k],
            st.wf_flit[landing, k],
        )
        if kind == 2:
            rb = target
            if checks and st.rb_cnt[rb] >= depth:
                _fail(st, np.int64(RECEIVE_OVER), rb)
                continue
            st.rb[rb * depth + (st.rb_head[rb] + st.rb_cnt[rb]) % depth] = flit
            st.rb_cnt[rb] += 1
            st.ga_cnt[rb // n_ej] += 1
            continue
        if kind == 0 and flit & 0xFFFF == 0:
            st.pk_hops[flit >> 16] += 1
        iv = target
        if checks and st.buf_cnt[iv] >= depth:
            _fail(st, np.int64(FIFO_OVER), iv)
            continue
        st.buf[iv * depth + (st.buf_head[iv] + st.buf_cnt[iv]) % depth] = flit
        st.buf_cnt[iv] += 1
        st.sw_cnt[st.iv_sw[iv]] += 1
        st.sc[BUSY] += 1
    user = _take(st)
    for k in range(st.wc_n[landing]):
        target = st.wc_target[landing, k]
        if target < 0:
            st.inj_credit[-1 - target] += 1
            continue
        st.credit[target] += 1
        if checks and st.credit[target] > depth:
            _fail(st, np.int64(CREDIT_OVER), target)
    st.wf_n[landing] = 0
    st.wc_n[landing] = 0
    st.sc[PHASE] = 1 - landing
    return user


# ---- whole cycles --------------------------------------------------------------------------


@njit(cache=True)
def step(st) -> None:
    """One cycle, its decisions all in the table (:func:`_lookups` found no miss)."""
    moved = _inject(st)
    for s in range(st.sw_port0.shape[0]):
        if st.sw_cnt[s] > 0 and _switch_cycle(st, s):
            moved = True
    landing = st.sc[PHASE]
    # flits or credits on the wires this cycle land at its end: that is activity too
    if st.wf_n[landing] > 0 or st.wc_n[landing] > 0:
        moved = True
    # a flit taken, or one presented to a user who holds ready low: never a deadlock
    if _end_of_cycle(st):
        moved = True
    st.sc[QUIET] = 0 if moved else st.sc[QUIET] + 1
    st.sc[CYCLE] += 1


@njit(cache=True)
def run(st, until: int, settle_after: int) -> int:
    """Cycles until ``until``, or until Python must act first (the status says why): a miss
    (nothing of that cycle done), the fabric stuck, a cycle the deadlock watch looks at, every
    watched packet delivered from ``settle_after`` on (-1: never), logs that could overflow in
    one more cycle, a broken invariant."""
    every = st.cfg[WATCH_EVERY]
    room_deliveries = st.dl_slot.shape[0] - st.ga_cnt.shape[0]
    room_paths = st.pl_slot.shape[0] - st.owner.shape[0]
    while st.sc[CYCLE] < until:
        if st.sc[N_DELIVERED_LOG] > room_deliveries or st.sc[N_PATH_LOG] > room_paths:
            return LOGS
        if _lookups(st) > 0:
            return MISS
        step(st)
        if st.sc[ERROR] != 0:
            return INVARIANT
        cycle = st.sc[CYCLE]
        if st.sc[QUIET] > 0 and st.sc[BUSY] > 0:
            return STUCK
        if cycle % every == 0:
            return WATCH
        if settle_after >= 0 and cycle >= settle_after and st.sc[WATCHED] == 0:
            return SETTLED
    return UNTIL
