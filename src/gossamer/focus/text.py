"""Terms of a text and the crawl's document frequencies.

A term is a lower-cased word of two or more letters (digits allowed after the first letter;
at most ``MAX_WORD_CHARS`` characters are read of a word), not a stop word, cut by a light
suffix stemmer (``transactions`` and ``transaction`` meet, ``locking`` and ``locks`` meet
``lock``). Stemming and weighting are the same for the topic, the pages and the anchors, so
only their agreement matters, not the stems' spelling.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

MAX_TEXT_CHARS = 200_000
"""Longer texts are judged on their start: a bound on the time a page costs."""
MAX_WORD_CHARS = 64
"""A longer word is read as its first 64 characters (no word of a language is that long; a
Git hash is 40): a bound on the bytes of each term the crawl keeps (document frequencies,
the background, the stemmer's cache), whatever a page holds."""

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    either else etc even every few for from further get gets got had has have having he her
    here hers him his how however i if in into is it its itself just let like many may me
    might more most much must my neither no nor not now of off on once one only or other our
    ours out over own per same shall she should since so some such than that the their them
    then there these they this those though through thus to too under until up upon us use
    used uses using very via was we were what when where whether which while who whom whose
    why will with within without would yet you your yours e g ie eg see also new two three
    first last next previous back home page top contents index search""".split()  # noqa: SIM905
)

_SUFFIXES = (
    ("ations", "ate"),
    ("ation", "ate"),
    ("nesses", ""),
    ("ness", ""),
    ("ments", ""),
    ("ment", ""),
    ("ingly", ""),
    ("ings", ""),
    ("ing", ""),
    ("edly", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("sses", "ss"),
    ("ed", ""),
    ("es", ""),
    ("ly", ""),
    ("s", ""),
)


def stem(word: str) -> str:
    """A light suffix stemmer: the first matching suffix goes when at least three letters
    stay; a doubled final consonant left behind (``locking`` -> ``lock``, ``running`` ->
    ``run``) is made single; a final ``e`` goes from a stem of four letters or more, so that
    ``restore``, ``restoring`` and ``restored`` meet (``restor``), as ``encode`` and
    ``encoding`` do."""
    stem_ = _strip(word)
    if len(stem_) > 3 and stem_[-1] == "e" and stem_[-2] != "e":
        return stem_[:-1]
    return stem_


def _strip(word: str) -> str:
    # only the suffixes ending in the word's last letter are tried, in their order (the
    # same first match as trying all of them: most words end in a letter none ends in)
    if len(word) <= 3:
        return word
    for suffix, replacement in _BY_LAST.get(word[-1], ()):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "sses")):
                return word[:-1]
            stem_ = word[: len(word) - len(suffix)] + replacement
            if not replacement and len(stem_) > 3 and stem_[-1] == stem_[-2] not in "lsz":
                stem_ = stem_[:-1]
            return stem_
    return word


_BY_LAST = {
    last: tuple(pair for pair in _SUFFIXES if pair[0][-1] == last)
    for last in {suffix[-1] for suffix, _ in _SUFFIXES}
}
"""The suffixes by their last letter, each letter's in the order of ``_SUFFIXES``."""


class _Stems(dict[str, str]):
    """Word -> term, stop words -> "" (cached: a site repeats its words on every page); a word
    met for the first time is stemmed by ``__missing__``, so a page's words are looked up in
    one pass with no check for misses after it."""

    def __missing__(self, word: str) -> str:
        if len(word) > MAX_WORD_CHARS:
            # a hash, a blob of base64, a run of letters a hostile page repeats: cut, and not
            # cached, so no term (nor a cached word) holds more than MAX_WORD_CHARS
            return self[word[:MAX_WORD_CHARS]]
        stripped = word.lstrip(_DIGITS)
        term = "" if len(stripped) < 2 or stripped in STOP_WORDS else stem(stripped)
        if len(self) < _MAX_STEMS:
            self[stripped] = term
        if len(stripped) < len(word) and len(self) < _MAX_STEMS // 2:
            # a word led by digits (a number, "3rd", "2d") is cached as it is written too:
            # else each of a page's numbers came here on every page (a tenth of a manual's
            # words, most of the look-ups' time); only while the cache is half full, so
            # numbers do not crowd the words out
            self[word] = term
        return term


_DIGITS = "0123456789"
_SEPARATORS = bytes(
    b if b in b"abcdefghijklmnopqrstuvwxyz0123456789" else b + 32 if 65 <= b <= 90 else 32
    for b in range(256)
)
"""Upper-case letters become lower-case, every other byte but a letter or a digit a space: the
text is lower-cased in the same pass (``str.lower`` of a text holding one character outside
ASCII takes Unicode's slow path for all of it)."""
_MAX_STEMS = 200_000
_STEMS = _Stems({word: "" for word in STOP_WORDS})
"""Built from a comprehension, not ``dict.fromkeys`` of a set: a dict pre-sized from a set
keeps the lay-out for keys of any type for good, and each look-up then compares the words
through the generic protocol (an eighth of ``terms``' instructions, in CPython 3.11)."""


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order (see the module docstring). Words are split on the
    bytes of the ASCII text (any other character a separator), a translation (lower-casing
    too) and a split that cost half a regular expression's scan; leading digits go in the
    stemmer's cache."""
    ascii_ = text[:MAX_TEXT_CHARS].encode("ascii", "replace")
    words = ascii_.translate(_SEPARATORS).decode("ascii").split()
    return list(filter(None, map(_STEMS.__getitem__, words)))


def with_pairs(words: list[str], pairs: frozenset[str]) -> list[str]:
    """``words`` plus the adjacent pairs among ``pairs`` (``"isolat level"``): the topic's
    phrases count as terms of their own."""
    if not pairs or len(words) < 2:
        return words
    firsts = _firsts(pairs)
    if firsts.isdisjoint(words):  # most short texts (anchors, contexts): one pass in C
        return words
    after = itertools.compress(itertools.pairwise(words), map(firsts.__contains__, words))
    found = [f"{a} {b}" for a, b in after]
    return words + [p for p in found if p in pairs]


@functools.lru_cache(maxsize=8)
def _firsts(pairs: frozenset[str]) -> frozenset[str]:
    """The first words of ``pairs`` (one topic's, asked for every text it reads)."""
    return frozenset(p.partition(" ")[0] for p in pairs)


_TABLE = 4096
_LOGS = [0.0, *(math.log(i) for i in range(1, _TABLE))]
_LOG_TABLE = np.array(_LOGS, dtype=np.float64)


class DocumentFrequencies:
    """How many judged documents hold each term: the inverse document frequency of a term
    falls as the crawl meets it on more pages (a site's boilerplate words weigh little).
    ``prior`` documents holding no term smooth the start. Bounded: past ``max_terms`` the
    rarest terms are forgotten."""

    def __init__(self, *, prior: int = 20, max_terms: int = 500_000) -> None:
        self.documents = 0
        self._df: Counter[str] = Counter()
        self._prior = prior
        self._max_terms = max_terms

    def add(self, document: Iterable[str]) -> None:
        """Count one document's (distinct) terms."""
        self.documents += 1
        # a bag's keys are distinct already: counted as they are, without a set built
        self._df.update(document.keys() if isinstance(document, Mapping) else set(document))
        if len(self._df) > self._max_terms:
            keep = self._df.most_common(self._max_terms // 2)
            self._df = Counter(dict(keep))

    def __len__(self) -> int:
        """Terms counted (at most ``max_terms``)."""
        return len(self._df)

    def idf(self, term: str) -> float:
        """``log((N + prior + 1) / (df + 1))``, at least a tenth of the largest."""
        n = self.documents + self._prior + 1
        return max(math.log(n / (self._df.get(term, 0) + 1)), 0.1 * math.log(n))

    def vector(self, counts: Mapping[str, int]) -> dict[str, float]:
        """The unit TF-IDF vector (sublinear term frequency) of a bag of terms: ``idf`` of
        each term, its weight and the norm taken by numpy over the bag at once (the same
        floats as one term at a time: the sum of squares is accumulated in order), small
        logarithms from a table."""
        size = len(counts)
        if not size:
            return {}
        n = math.log(self.documents + self._prior + 1)
        found = map(self._df.get, counts, itertools.repeat(0))
        idf = n - _logs(np.fromiter(found, dtype=np.int64, count=size) + 1)
        tf = 1.0 + _logs(np.fromiter(counts.values(), dtype=np.int64, count=size))
        weights = tf * np.maximum(idf, 0.1 * n)
        # cumsum's ufunc without its Python wrapper: the same floats, summed in order
        squares = float(np.add.accumulate(weights * weights)[-1])
        if squares == 0:
            return {}
        return dict(zip(counts, (weights / math.sqrt(squares)).tolist(), strict=True))


def _logs(values: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """``math.log`` of positive counts (of 0: 0), from the table when they are small."""
    if int(np.maximum.reduce(values)) < _TABLE:  # the ufunc: no ``ndarray.max`` wrapper
        return _LOG_TABLE[values]
    logs = (_LOGS[v] if v < _TABLE else math.log(v) for v in values.tolist())
    return np.fromiter(logs, dtype=np.float64, count=len(values))


def normalise(vector: Mapping[str, float]) -> dict[str, float]:
    """``vector`` scaled to unit length (empty stays empty)."""
    # the same products and quotients, summed in the same order, with no bytecode a term
    weights = vector.values()
    norm = math.sqrt(sum(map(operator.mul, weights, weights)))
    if norm == 0:
        return {}
    return dict(zip(vector, map(operator.truediv, weights, itertools.repeat(norm)), strict=True))


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Dot product of two unit vectors."""
    if len(a) > len(b):
        a, b = b, a
    # the same products summed in the same order, with no bytecode a term
    products = map(operator.mul, a.values(), map(b.get, a, itertools.repeat(0.0)))
    total: float = sum(products)
    return total
