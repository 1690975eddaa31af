"""Python's ``random`` (MT19937, as CPython's ``_randommodule.c`` and ``random.py`` draw),
compiled: :class:`~zfabric.sim.traffic.Traffic`'s Bernoulli draws for many cycles at once,
the same packets bit for bit as its per-cycle Python loop, from the same generator state
(``random.getstate()``), which they leave where that loop would.

The state is an array of 625 unsigned 32-bit words: the 624 of the twister, then the index of
the next one. The twister's own width: its twist and tempering run on twice the words a vector
instruction holds at 64 bits, and a draw reads half the memory.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint32

_N, _M = 624, 397
_MATRIX_A, _UPPER, _LOWER = uint32(0x9908B0DF), uint32(0x80000000), uint32(0x7FFFFFFF)
_ONE = uint32(1)

#: a destination table's entry for a source that sends nothing
NO_DESTINATION = -1
#: the destination table that stands for uniform traffic (a draw per packet)
UNIFORM = np.empty(0, np.int64)
#: ``random()``'s first word holds its top 27 bits: a unit of it is 2**26 of the 53
_FIRST_UNIT = 67108864.0


def state_array(state: tuple) -> np.ndarray:
    """The twister's words and index from ``random.getstate()``."""
    version, words, _gauss = state
    if version != 3 or len(words) != _N + 1:
        raise ValueError(f"not a Mersenne Twister state of version 3: {version}")
    return np.array(words, np.uint32)


def state_tuple(mt: np.ndarray, gauss: float | None) -> tuple:
    """``random.setstate()``'s argument for the array ``mt`` (``gauss``: the state's own)."""
    return 3, tuple(mt.tolist()), gauss


@njit(cache=True)
def _mix(upper: int, lower: int, far: int) -> int:
    y = (upper & _UPPER) | (lower & _LOWER)
    return far ^ (y >> _ONE) ^ ((uint32(0) - (y & _ONE)) & _MATRIX_A)


@njit(cache=True)
def _twist(mt: np.ndarray) -> None:
    """The next 624 words, in three loops where the indices wrap (none with a modulo, so the
    compiler can vectorise them)."""
    for kk in range(_N - _M):
        mt[kk] = _mix(mt[kk], mt[kk + 1], mt[kk + _M])
    for kk in range(_N - _M, _N - 1):
        mt[kk] = _mix(mt[kk], mt[kk + 1], mt[kk + _M - _N])
    mt[_N - 1] = _mix(mt[_N - 1], mt[0], mt[_M - 1])


@njit(cache=True)
def _temper(y: int) -> int:
    """``genrand_uint32``'s output of the state word ``y``."""
    y ^= y >> uint32(11)
    y ^= (y << uint32(7)) & uint32(0x9D2C5680)
    y ^= (y << uint32(15)) & uint32(0xEFC60000)
    return y ^ (y >> uint32(18))


@njit(cache=True)
def _bit_length(n: int) -> int:
    bits = 0
    while n >> bits:
        bits += 1
    return bits


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
    cycle and source a ``random() < rate``; then its destination (``randrange(endpoints - 1)``,
    the source skipped, when ``destinations`` is empty, else its entry,
    :data:`NO_DESTINATION` for none) and its length: ``shortest``, or with ``lengths`` > 0
    ``randint(shortest, shortest + lengths - 1)`` (a draw even when ``lengths`` is 1, as
    Python's).

    ``random()`` is ``(a * 2**26 + b) / 2**53``, ``a`` and ``b`` the top 27 and 26 bits of two
    words: ``a`` alone decides it against the rate, by an integer comparison, unless the rate
    lies inside ``a``'s unit of ``2**26`` (then ``b`` does); when ``a`` decides, the second
    word is stepped past, not tempered. ``randrange(n)`` draws ``n.bit_length()`` bits until
    they are below ``n``. The index of the next word stays in a register through the batch
    (every word is taken here, inline, the twist where the words run out written out at each:
    a call, or numba's inlining of one, per word cost twice the time)."""
    rows = np.empty((max(16, int(2 * rate * endpoints * (end - start)) + 16), 4), np.int64)
    n = 0
    uniform = destinations.shape[0] == 0
    threshold = rate * 9007199254740992.0  # random() < rate, on its 53-bit integer
    top = int(threshold / _FIRST_UNIT)  # the rate's whole units of 2**26
    dst_bits, length_bits = _bit_length(endpoints - 1), _bit_length(lengths)
    i = np.int64(mt[_N])
    for cycle in range(start, end):
        for src in range(endpoints):
            if i >= _N:
                _twist(mt)
                i = 0
            a = np.int64(_temper(mt[i]) >> uint32(5))
            i += 1
            if i >= _N:
                _twist(mt)
                i = 0
            if a < top:
                i += 1
            elif a > top:
                i += 1
                continue
            else:
                b = np.int64(_temper(mt[i]) >> uint32(6))
                i += 1
                if not a * _FIRST_UNIT + b < threshold:
                    continue
            if uniform:
                dst = endpoints - 1
                while dst >= endpoints - 1:
                    if i >= _N:
                        _twist(mt)
                        i = 0
                    dst = np.int64(_temper(mt[i]) >> uint32(32 - dst_bits))
                    i += 1
                dst += dst >= src
            else:
                dst = destinations[src]
                if dst == NO_DESTINATION:
                    continue
            length = shortest
            if lengths:
                extra = lengths
                while extra >= lengths:
                    if i >= _N:
                        _twist(mt)
                        i = 0
                    extra = np.int64(_temper(mt[i]) >> uint32(32 - length_bits))
                    i += 1
                length += extra
            if n == rows.shape[0]:
                grown = np.empty((2 * n, 4), np.int64)
                grown[:n] = rows
                rows = grown
            rows[n, 0], rows[n, 1], rows[n, 2], rows[n, 3] = cycle, src, dst, length
            n += 1
    mt[_N] = i
    return rows[:n]
