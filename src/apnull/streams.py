"""The package's one random generator: keyed SplitMix64 streams, their keys, and what is drawn from them.

Every random number apnull uses comes from a *counter-based* stream: the i-th number of the stream
with key ``key`` is SplitMix64's output for the state ``key + (i + 1) * 0x9E3779B97F4A7C15``
(Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA), its top 53
bits read as a uniform in [0, 1) (:func:`uniform`). Any number of a stream can be computed alone,
so compiled code in any thread, process or dask worker draws the same numbers, and a stream can be
continued from a saved counter: the first L numbers of a longer run are those of a shorter one.

Keys:

- :func:`stream_key` (BLAKE2b of the seed and the parts naming what the stream is for, never
  Python's salted ``hash``): every stream of the scoring (a perturbation's permutations in one
  stratum, a query's conditional null, a label's label-set permutations, a Monte Carlo law of the
  per-query p-values);
- :func:`sample_key` (numpy's ``SeedSequence`` of (seed, m, n, block)): the blocks of the null
  sampler (:mod:`apnull.sampling`).

What is drawn, each a fixed function of the stream's numbers (so every caller gets the same draws):

- :func:`draw_distinct`: k distinct members of a range by rejection (the label permutations of
  :mod:`apnull.score`: a stratum's members carrying a perturbation's label, a positive's stand-in);
- :func:`shuffle`: a Fisher-Yates shuffle (the label-set permutations of consistency);
- :func:`uniforms`: a block of numbers as a numpy array (the plain-numpy reference of the sampler;
  its compiled kernel calls :func:`uniform`).
"""

from __future__ import annotations

import functools
import hashlib

import numba
import numpy as np

from .compiled import entry, inner

__all__ = ["GOLDEN", "uniform", "uniforms", "stream_key", "stream_keys", "sample_key", "draw_distinct", "shuffle"]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2 ** -53


@numba.njit(cache=True, inline="always")
def uniform(key, index):  # pragma: no cover - compiled
    """The ``index``-th uniform in [0, 1) (53 bits) of the stream ``key`` (both uint64)."""
    z = key + (index + np.uint64(1)) * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TO_UNIT


def uniforms(key, first: int, count: int) -> np.ndarray:
    """Numbers ``first`` .. ``first + count - 1`` of the stream ``key``, as :func:`uniform` gives them
    (numpy, for references and tests)."""
    with np.errstate(over="ignore"):
        idx = np.arange(first + 1, first + count + 1, dtype=np.uint64)
        z = np.uint64(key) + idx * GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * _TO_UNIT


def stream_key(seed: int, *parts) -> int:
    """The 64-bit key of the stream for (seed, *parts), as a Python int.

    BLAKE2b (8 bytes, little-endian) of ``str(seed)`` and ``str(part)`` joined by the unit separator
    ``\\x1f``, so a stream depends on what it is for, never on run order. The scoring uses
    (seed, perturbation key, stratum) for a perturbation's permutations in one stratum, (seed,
    "query", perturbation key, i) for query i's conditional null, (seed, "consistency", label) for a
    label's label-set permutations, (seed, "compare", statistic) for a pipeline comparison's sign flips,
    (seed, "law", m, n) for a Monte Carlo law and (seed, "copairs", m, n) for a copairs-style null row.
    """
    text = "\x1f".join(str(p) for p in (int(seed),) + parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def stream_keys(seed: int, *columns) -> np.ndarray:
    """(n,) uint64: ``stream_key(seed, *parts)`` of every row ``parts`` of the ``columns`` (sequences of
    n parts each; at least one), the same bits (each digest read little-endian) without a Python int a
    key: a screen's 10,000 keys in about half the time."""
    texts = [str(int(seed))] * len(columns[0])
    for column in columns:
        texts = [f"{text}\x1f{part!s}" for text, part in zip(texts, column)]
    blake = hashlib.blake2b
    digests = b"".join([blake(text.encode(), digest_size=8).digest() for text in texts])
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


@functools.lru_cache(maxsize=65536)
def sample_key(seed: int, m: int, n: int, block: int) -> np.uint64:
    """The key of block ``block`` of the null sampler's draws of size (m, n) under ``seed`` (numpy's
    SeedSequence mixes the four numbers; cached, as it costs more than sampling a small block)."""
    return np.random.SeedSequence([seed, m, n, block]).generate_state(1, dtype=np.uint64)[0]


@inner()
def draw_distinct(key, counter, size, offset, out, first, count, avoid):  # pragma: no cover - compiled
    """Draw ``count`` distinct members of offset + [0, size), none equal to ``avoid``, into
    out[first:first + count], by rejection; returns the stream's next unused counter.

    Each candidate is ``offset + floor(u * size)`` (``size - 1`` if rounding reaches ``size``) for the
    next uniform u of stream ``key`` from index ``counter``; a candidate already drawn in this call,
    or equal to ``avoid`` (-1: none), is rejected and the next uniform tried. Every subset of the
    range is then equally likely, in a uniformly random order.
    """
    pos = first
    while pos < first + count:
        idx = np.int64(uniform(key, counter) * size)
        counter += np.uint64(1)
        if idx >= size:
            idx = size - 1
        g = offset + idx
        fresh = g != avoid
        for t in range(first, pos):
            if out[t] == g:
                fresh = False
                break
        if fresh:
            out[pos] = g
            pos += 1
    return counter


@entry()
def shuffle(perm, key, counter):  # pragma: no cover - compiled
    """Shuffle ``perm`` in place (Fisher-Yates, from the last position down) with uniforms of the stream
    ``key`` from index ``counter``; returns the next unused counter (``counter + perm.size - 1``).

    Position i swaps with j = floor(u * (i + 1)) (bias below 2^-40 from the 53-bit uniform).
    """
    for i in range(perm.size - 1, 0, -1):
        j = np.int64(uniform(key, counter) * (i + 1))
        counter += np.uint64(1)
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
    return counter
