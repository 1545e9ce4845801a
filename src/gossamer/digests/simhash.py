"""The SimHash of a main text (near duplicates, :mod:`gossamer.digests.base`).

In one C pass where ``digests/_simhash.c`` is built (each shingle hashed where it lies, its
bytes' votes counted in one table), else in numpy (`_simhash`, the reference, which also runs
with ``GOSSAMER_NATIVE=0``; the tests compare the two and a definition one shingle at a time).
numpy is loaded only by the reference: with the C part the SimHash never loads it (0.13 s of
CPU; a whole-job crawl of the real-pages web then loads no numpy at all). On the 2,666 texts
of the real pages the C pass costs 741 M instructions where numpy's cost 2,075 M, its import
included (callgrind of both over the ``pages.jsonl`` texts of a whole-job crawl of the
real-pages web).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gossamer.parse.native import load

if TYPE_CHECKING:
    import numpy.typing as npt

MAX_NEAR_BYTES = 200_000
"""Bytes of a text (UTF-8) read for its SimHash."""
SHINGLE = 16
"""Letters per shingle (about three words)."""
SAMPLE = 4
"""One shingle in this many votes, in texts of more than ``SAMPLE * 256`` shingles."""
_FEW = 256

_LOWER_TABLE = bytes(c + 32 if 65 <= c <= 90 else c for c in range(256))
_DROPPED = bytes(c for c in range(128) if not chr(c).isalnum())
"""Dropped: every ASCII byte but letters and digits (a non-ASCII character's bytes stay)."""
_PAD = bytes(SHINGLE)


def text_simhash(encoded: bytes) -> int:
    """The SimHash of a UTF-8 text: its letters and digits, ASCII in lower case (in C, the
    letters picked in the same call: `_text_simhash`)."""
    return _text_hash(encoded)


def text_utf8(text: str, errors: str = "surrogatepass") -> bytes:
    """``text.encode("utf-8", errors)``, through the UTF-8 copy CPython keeps with the text
    where the C part is built: the record's writers (SQLite's binding, msgspec's JSON) read
    that copy later instead of encoding the text again (on python3-doc's whole-job crawl its
    525 texts were encoded twice, 90 M instructions each time). ``errors`` matters only for
    a text with a lone surrogate, which takes ``encode``."""
    if _SIMHASH is not None:
        try:
            return _SIMHASH.utf8(text)  # type: ignore[no-any-return]
        except UnicodeEncodeError:
            pass
    return text.encode("utf-8", errors)


def _text_simhash(encoded: bytes) -> int:
    """`text_simhash` in Python: the letters picked by ``bytes.translate`` (the reference of
    the C module's ``text_simhash``, which picks them in one branchless pass of its own)."""
    return _hash(encoded[:MAX_NEAR_BYTES].translate(_LOWER_TABLE, _DROPPED))


def simhash(letters: npt.NDArray[Any]) -> int:
    """The 64-bit SimHash of the :data:`SHINGLE`-byte shingles of ``letters`` (a text's
    letters and digits, lower case, nothing between them), each shingle's hash one vote per
    bit; of a long text's shingles one in :data:`SAMPLE` votes (the same ones in every
    copy of the text)."""
    import numpy as np

    return _hash(np.ascontiguousarray(letters, dtype=np.uint8).tobytes())


@functools.cache
def _tables() -> dict[str, Any]:
    """numpy's constants of `_simhash`, made once, when it first runs."""
    import numpy as np

    return {
        # each byte value's bits, as floats: the votes are summed by a float matrix product
        # (BLAS), a sixth of the time of numpy's integer one, and exact (counts stay far
        # below 2**53)
        "bits": ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64),
        # each byte position's first bin: the keys are built as uint16 in one pass
        # (``np.add`` with a dtype), not as a copy to intp and a second pass adding them
        "offsets": np.arange(8, dtype=np.uint16) * 256,
        "sampled": np.uint64((1 << 64) // SAMPLE),
        "k1": np.uint64(0x9E3779B97F4A7C15),
        "k2": np.uint64(0xBF58476D1CE4E5B9),
        "k3": np.uint64(0x94D049BB133111EB),
        "s31": np.uint64(31),
        "s29": np.uint64(29),
        "s32": np.uint64(32),
    }


def _simhash(letters: bytes) -> int:
    """:func:`simhash` of the bytes ``letters`` in numpy (the reference of the C pass):
    every step in place or one pass where it can be, as the per-call cost of a numpy step is
    most of a short text's."""
    import numpy as np

    t = _tables()
    if len(letters) < SHINGLE:
        letters += _PAD[len(letters) :]
    size = len(letters)
    # the 8-byte window at every offset, as one view (a stride of one byte, no copy)
    windows = np.ndarray((size - 7,), dtype="<u8", buffer=letters, strides=(1,))
    head = windows[:-8] * t["k1"]  # a 16-byte shingle: the window there and 8 bytes on
    if size > SAMPLE * _FEW:  # by the top bits of the first half's product
        kept = np.flatnonzero(head < t["sampled"])
        shingles = windows[8:].take(kept)
        shingles ^= head.take(kept)
    else:
        shingles = head
        shingles ^= windows[8:]
    shingles ^= shingles >> t["s31"]  # splitmix64's finaliser: every bit a fair vote
    shingles *= t["k2"]
    shingles ^= shingles >> t["s29"]
    shingles *= t["k3"]
    shingles ^= shingles >> t["s32"]
    count = len(shingles)
    keys = np.add(shingles.view(np.uint8).reshape(count, 8), t["offsets"], dtype=np.uint16)
    counts = np.bincount(keys.ravel(), minlength=2048).reshape(8, 256).astype(np.float64)
    votes = (counts @ t["bits"]).ravel()
    majority = votes > count / 2  # as ``votes * 2 > count``: whole counts, exact in floats
    return int(np.packbits(majority, bitorder="little").view("<u8")[0])


_SIMHASH = load("gossamer.digests._simhash")
if _SIMHASH is not None and getattr(_SIMHASH, "MAX_NEAR_BYTES", None) != MAX_NEAR_BYTES:
    _SIMHASH = None  # built from another version of the source: its bound would differ
_hash: Callable[[bytes], int] = _simhash if _SIMHASH is None else _SIMHASH.simhash
"""`_simhash`, in C where it is built."""
_text_hash: Callable[[bytes], int] = _text_simhash if _SIMHASH is None else _SIMHASH.text_simhash
"""`_text_simhash`, in C where it is built."""
