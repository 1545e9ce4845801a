"""The SimHash of a main text (near duplicates, :mod:`gossamer.digests.base`), in numpy.

Imported only by a crawl that looks for near duplicates: a crawl with exact digests alone does
not load numpy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MAX_NEAR_BYTES = 200_000
"""Bytes of a text (UTF-8) read for its SimHash."""
SHINGLE = 16
"""Letters per shingle (about three words)."""
SAMPLE = 4
"""One shingle in this many votes, in texts of more than ``SAMPLE * 256`` shingles."""
_FEW = 256
_SAMPLED = np.uint64((1 << 64) // SAMPLE)

_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[65:91] += 32
_KEEP = np.zeros(256, dtype=bool)
_KEEP[48:58] = _KEEP[65:91] = _KEEP[97:123] = _KEEP[128:] = True
"""ASCII letters and digits and every byte of a non-ASCII character."""
_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)
_BYTE_OFFSETS = np.arange(8, dtype=np.uint16) * 256
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)
_K3 = np.uint64(0x94D049BB133111EB)


def text_simhash(encoded: bytes) -> int:
    """The SimHash of a UTF-8 text: its letters and digits, ASCII in lower case."""
    raw = np.frombuffer(encoded[:MAX_NEAR_BYTES], dtype=np.uint8)
    return simhash(np.take(_LOWER, np.compress(np.take(_KEEP, raw), raw)))


def simhash(letters: npt.NDArray[np.uint8]) -> int:
    """The 64-bit SimHash of the :data:`SHINGLE`-byte shingles of ``letters`` (a text's
    letters and digits, lower case, nothing between them), each shingle's hash one vote per
    bit; of a long text's shingles one in :data:`SAMPLE` votes (the same ones in every
    copy of the text)."""
    if len(letters) < SHINGLE:
        letters = np.concatenate([letters, np.zeros(SHINGLE - len(letters), np.uint8)])
    sample = len(letters) > SAMPLE * _FEW
    parts = []
    for start in range(8):  # the 8-byte windows at start, start + 8 ... as one view
        windows = letters[start : start + 8 * ((len(letters) - start) // 8)].view("<u8")
        head, tail = windows[:-1] * _K1, windows[1:]  # two windows: a 16-byte shingle
        if sample:  # by the top bits of the first half's product, which mix its 8 letters
            kept = head < _SAMPLED
            head, tail = head[kept], tail[kept]
        parts.append(head ^ tail)
    shingles = np.concatenate(parts)
    shingles ^= shingles >> np.uint64(31)  # splitmix64's finaliser: every bit a fair vote
    shingles *= _K2
    shingles ^= shingles >> np.uint64(29)
    shingles *= _K3
    shingles ^= shingles >> np.uint64(32)
    count = len(shingles)
    keys = shingles.view(np.uint8).reshape(count, 8).astype(np.uint16) + _BYTE_OFFSETS
    votes = (np.bincount(keys.ravel(), minlength=2048).reshape(8, 256) @ _BITS).ravel()
    return int.from_bytes(np.packbits(votes * 2 > count, bitorder="little").tobytes(), "little")
