"""Python's ``random`` (MT19937, as CPython's ``_randommodule.c`` and ``random.py`` draw),
compiled: :class:`~zfabric.sim.traffic.Traffic`'s Bernoulli draws for many cycles at once,
the same packets bit for bit as its per-cycle Python loop, from the same generator state
(``random.getstate()``), which they leave where that loop would.

The state is an array of 625 words: the 624 of the twister, then the index of the next one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_N, _M = 624, 397
_MATRIX_A, _UPPER, _LOWER = 0x9908B0DF, 0x80000000, 0x7FFFFFFF

#: a destination table's entry for a source that sends nothing
NO_DESTINATION = -1
#: the destination table that stands for uniform traffic (a draw per packet)
UNIFORM = np.empty(0, np.int64)


def state_array(state: tuple) -> np.ndarray:
    """The twister's words and index from ``random.getstate()``."""
    version, words, _gauss = state
    if version != 3 or len(words) != _N + 1:
        raise ValueError(f"not a Mersenne Twister state of version 3: {version}")
    return np.array(words, np.int64)


def state_tuple(mt: np.ndarray, gauss: float | None) -> tuple:
    """``random.setstate()``'s argument for the array ``mt`` (``gauss``: the state's own)."""
    return 3, tuple(mt.tolist()), gauss


@njit(cache=True)
def _mix(upper: int, lower: int, far: int) -> int:
    y = (upper & _UPPER) | (lower & _LOWER)
    return far ^ (y >> 1) ^ (-(y & 1) & _MATRIX_A)


@njit(cache=True)
def _twist(mt: np.ndarray) -> None:
    """The next 624 words, in three loops where the indices wrap (none with a modulo, so the
    compiler can vectorise them)."""
    for kk in range(_N - _M):
        mt[kk] = _mix(mt[kk], mt[kk + 1], mt[kk + _M])
    for kk in range(_N - _M, _N - 1):
        mt[kk] = _mix(mt[kk], mt[kk + 1], mt[kk + _M - _N])
    mt[_N - 1] = _mix(mt[_N - 1], mt[0], mt[_M - 1])
    mt[_N] = 0


@njit(cache=True)
def next_word(mt: np.ndarray) -> int:
    """``genrand_uint32``: the next 32-bit word."""
    if mt[_N] >= _N:
        _twist(mt)
    y = mt[mt[_N]]
    mt[_N] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return y ^ (y >> 18)


@njit(cache=True)
def _skip_word(mt: np.ndarray) -> None:
    """Step past the next word without tempering it."""
    if mt[_N] >= _N:
        _twist(mt)
    mt[_N] += 1


@njit(cache=True)
def random_below(mt: np.ndarray, threshold: float) -> bool:
    """``random() < threshold / 2**53``, ``random()`` being ``(a * 2**26 + b) / 2**53`` with
    ``a`` and ``b`` the top 27 and 26 bits of two words: ``a`` alone decides it unless the
    threshold lies inside ``[a, a + 1) * 2**26``; when it does decide, the second word is
    stepped past, not tempered."""
    a = next_word(mt) >> 5
    if (a + 1) * 67108864.0 <= threshold:
        _skip_word(mt)
        return True
    if a * 67108864.0 >= threshold:
        _skip_word(mt)
        return False
    return a * 67108864.0 + (next_word(mt) >> 6) < threshold


@njit(cache=True)
def below(mt: np.ndarray, n: int) -> int:
    """``randrange(n)`` for 0 < ``n`` < 2**32: ``getrandbits(n.bit_length())`` until below
    ``n``."""
    bits = 0
    while n >> bits:
        bits += 1
    r = next_word(mt) >> (32 - bits)
    while r >= n:
        r = next_word(mt) >> (32 - bits)
    return r


@njit(cache=True)
def bernoulli_packets(
    mt: np.ndarray,
    start: int,
    end: int,
    endpoints: int,
    rate: float,
    destinations: np.ndarray,
    shortest: int,
    lengths: int,
) -> np.ndarray:
    """The packets of cycles ``start`` to ``end - 1`` as rows (cycle, src, dst, length): per
    cycle and source a ``random() < rate``; then its destination (a uniform draw when
    ``destinations`` is empty, else its entry, :data:`NO_DESTINATION` for none) and its length:
    ``shortest``, or with ``lengths`` > 0 ``randint(shortest, shortest + lengths - 1)`` (a draw
    even when ``lengths`` is 1, as Python's)."""
    rows = np.empty((max(16, int(2 * rate * endpoints * (end - start)) + 16), 4), np.int64)
    n = 0
    uniform = destinations.shape[0] == 0
    threshold = rate * 9007199254740992.0  # random() < rate, on its 53-bit integer
    for cycle in range(start, end):
        for src in range(endpoints):
            if not random_below(mt, threshold):
                continue
            if uniform:
                dst = below(mt, endpoints - 1)
                dst += dst >= src
            else:
                dst = destinations[src]
                if dst == NO_DESTINATION:
                    continue
            length = shortest
            if lengths:
                length += below(mt, lengths)
            if n == rows.shape[0]:
                grown = np.empty((2 * n, 4), np.int64)
                grown[:n] = rows
                rows = grown
            rows[n, 0], rows[n, 1], rows[n, 2], rows[n, 3] = cycle, src, dst, length
            n += 1
    return rows[:n]
