"""The topic of a focused crawl and how well a text matches it.

The topic comes from a phrase and the main text of example pages. Commas, semicolons and
``and``/``or`` split the phrase into facets (``database transactions, isolation levels and
locking`` has three); the words of a facet and its adjacent word pairs are its terms.

A page's ``relevance`` (0..1) blends two signals, each scaled so that an on-topic page scores
about 1 and an off-topic one about 0, whatever the topic:

* phrase coverage: per facet, the weighted share of its terms the page holds, each term's
  count saturated and normalised by the page's length as BM25 does (k1 = 4: a passing
  mention in a long page counts little); a term weighs its IDF times its weight in the
  examples' centroid (the examples say which of the phrase's words make the topic: not a
  word every page of their site says, nor a word pair their pages never write), the IDF
  alone (a pair's twice) while there is no centroid; facets combine as a noisy-or (``1 -
  prod(1 - facet)``): one facet covered well, or several covered in part, make a match;
* example similarity: the TF-IDF cosine between the page and the examples' centroid, divided
  by how similar the examples are to each other (leave one out; a fixed 0.5 with a single
  example), so a page as close to the examples as they are to one another scores 1. The
  centroid is the examples' less the mean of the pages judged off-topic so far (Rocchio's
  non-relevant set): what the examples share with their whole site leaves it, and the
  topic's own words stay however many on-topic pages the crawl finds.

A page's lead (its first ``LEAD_TERMS`` terms: its title, heading and first sentence) says
what it is about whatever its length: its phrase coverage (per facet the weighted share of
the facet's terms it holds, once being enough) lifts the mean half way towards it when it is
higher, so a short reference page whose heading names the topic ("COMMIT — commit the
current transaction") is not judged only by a body too short to match the examples, and a
long page sharing the topic's vocabulary without naming the topic at its start gains nothing.

Their mean (or the one present) goes through a logistic curve centred on 0.5, so the default
threshold 0.5 separates on-topic from off-topic pages. Document frequencies come from the
crawl itself: every judged page counts, so words common on the site weigh less as it goes.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gossamer.focus.text import DocumentFrequencies, cosine, normalise, terms, with_pairs

_FACET_SPLIT = re.compile(r"[,;/|]|\band\b|\bor\b|\n", re.IGNORECASE)
_K1 = 4.0
_B = 0.6
_STEEPNESS = 9.0
_SINGLE_EXAMPLE_SIMILARITY = 0.5
_CENTROID_TERMS = 60
MAX_JUDGED_CHARS = 10_000
"""A page is judged on the start of its main text (some 1,500 words): what it is about shows
there, and a 200-page reference costs no more than a chapter. Less lowers the topic's words
as a crawl goes: the short command pages of ``tests/focus/test_judging_drift.py``, met after
the long ones, fall from 0.71 (``COMMIT``, at 10,000) to 0.51 at 7,000-8,000 and 0.47 at
6,000, though the replayed crawls' recall stayed the same."""
LEAD_TERMS = 20
"""Terms of a page's start read as its lead (about its first 200 characters)."""
_REFRESH_EVERY = 25
_FEEDBACK_EVERY = 5
"""Judged pages at least between two rebuilds that new pseudo-examples ask for."""
_EARLY_REFRESHES = frozenset({5, 10, 15})
"""Judged pages at which the topic vector is also rebuilt: the background is young."""
_BACKGROUND_WEIGHT = 1.0
"""Rocchio's weight of the crawl's background against the examples' centroid."""
_BACKGROUND_SHRINK = 5
"""Off-topic pages the background's mean counts besides the judged ones (as empty pages):
the first few off-topic pages (a front page listing the topic's own chapters) do not take
the topic's words out of the centroid."""
_MAX_BACKGROUND = 50_000
_PSEUDO_FROM = 0.7
"""Phrase coverage from which a page may serve as a pseudo-example."""
_MAX_PSEUDO = 5
"""Judged pages between two rebuilds of the topic vector (its IDF weights change)."""
_CENTROID_FLOOR = 0.02
"""A facet term's weight beside its weight in the examples' centroid (unit length, 60
terms: a term the examples dwell on weighs 0.1-0.3)."""


class TopicError(ValueError):
    """The topic has no terms: an empty phrase (and no examples), or examples without text."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a text matched the topic."""

    relevance: float
    phrase: float | None
    """Phrase coverage, 0..1 (None without a phrase)."""
    examples: float | None
    """Example similarity scaled to the examples' own (None without examples)."""
    lead: float = 0.0
    """How strongly the page's lead (title, heading, first sentence) names the topic."""


class Topic:
    """A topic built from ``phrase`` and the main texts of example pages."""

    def __init__(self, phrase: str, examples: Sequence[str] = ()) -> None:
        self.facets: list[list[str]] = []
        pairs: set[str] = set()
        for part in _FACET_SPLIT.split(phrase):
            words = terms(part)
            facet = list(dict.fromkeys(words + [f"{a} {b}" for a, b in itertools.pairwise(words)]))
            pairs.update(t for t in facet if " " in t)
            if facet:
                self.facets.append(facet)
        self.pairs = frozenset(pairs)
        self.df = DocumentFrequencies()
        self._examples = [Counter(with_pairs(terms(text), self.pairs)) for text in examples]
        self._examples = [c for c in self._examples if c]
        if not self.facets and not self._examples:
            raise TopicError("the topic has no words: give a phrase or example pages with text")
        for counts in self._examples:
            self.df.add(counts)
        self._pseudo: list[tuple[float, Counter[str]]] = []
        self._background: dict[str, float] = {}
        """The sum of the off-topic judged pages' unit vectors: what the crawl's pages share
        besides the topic (Rocchio's non-relevant set). A focused crawl judges mostly
        on-topic pages: were they counted, the topic's own words would leave the centroid as
        the crawl finds more of them."""
        self._background_pages = 0
        self._length = 300.0
        self._judged = 0
        self._stale = False
        """Pseudo-examples changed since the last rebuild."""
        self._refreshed = 0
        self.vector: dict[str, float] = {}
        self.version = 0
        """Counts the rebuilds of ``vector``."""
        self._centroid: dict[str, float] = {}
        self._reference = _SINGLE_EXAMPLE_SIMILARITY
        self._facet_weights: list[list[float]] = []
        self._refresh()

    @property
    def judged(self) -> int:
        """Texts judged so far."""
        return self._judged

    @property
    def has_phrase(self) -> bool:
        return bool(self.facets)

    @property
    def has_examples(self) -> bool:
        return bool(self._examples)

    def words(self, text: str) -> list[str]:
        """The terms of ``text``, the topic's word pairs among them."""
        return with_pairs(terms(text), self.pairs)

    def judge(self, text: str) -> Judgement:
        """Judge a page's main text (and count it in the document frequencies)."""
        words = terms(text[:MAX_JUDGED_CHARS])
        counts = Counter(with_pairs(words, self.pairs))
        self.df.add(counts)
        length = sum(counts.values())
        self._length += (length - self._length) / min(self.df.documents, 200)
        self._judged += 1
        due = self._judged % _REFRESH_EVERY == 0 or self._judged in _EARLY_REFRESHES
        if due or (self._stale and self._judged - self._refreshed >= _FEEDBACK_EVERY):
            self._refresh()
        phrase = self._coverage(counts, length) if self.facets else None
        examples = None
        vector = self.df.vector(counts)
        if len(self._examples) + len(self._pseudo) >= (1 if self._examples else 2):
            similarity = cosine(vector, self._centroid)
            examples = min(similarity / self._reference, 1.5)
        if phrase is not None and phrase >= _PSEUDO_FROM and len(self._examples) < _MAX_PSEUDO:
            self._feedback(phrase, counts)
        signals = [s for s in (phrase, examples) if s is not None]
        score = sum(signals) / len(signals)
        lead = self._lead(with_pairs(words[:LEAD_TERMS], self.pairs)) if self.facets else 0.0
        score = max(score, (score + lead) / 2)
        relevance = _squash(score)
        if relevance < 0.5:
            self._add_background(vector)
        return Judgement(relevance, phrase, examples, lead)

    def mentions(self, text: str) -> bool:
        """Whether ``text`` holds one of the phrase's words (not counted as judged)."""
        words = {t for facet in self.facets for t in facet}
        return any(t in words for t in self.words(text[:MAX_JUDGED_CHARS]))

    def link_match(self, words: Sequence[str]) -> float:
        """How strongly a short text (anchor, URL words) points at the topic, 0..1: the topic
        weight of its distinct terms, one strong term giving about 0.6."""
        if not words:
            return 0.0
        vector = self.vector
        mass = sum(map(vector.get, set(words), itertools.repeat(0.0)))  # no bytecode a term
        return 1.0 - math.exp(-mass / self._strong)

    def _coverage(self, counts: Counter[str], length: int) -> float:
        norm = _K1 * (1 - _B + _B * length / max(self._length, 1.0))
        missed = 1.0
        for facet, weights in zip(self.facets, self._facet_weights, strict=True):
            got = sum(
                w * (counts[t] * (_K1 + 1) / (counts[t] + norm)) / (_K1 + 1)
                for t, w in zip(facet, weights, strict=True)
                if counts.get(t)
            )
            missed *= 1.0 - got / sum(weights)
        return 1.0 - missed

    def _lead(self, words: Sequence[str]) -> float:
        """Phrase coverage of a page's lead: per facet the weighted share of its terms the
        lead holds (once is enough: a heading says a word once), facets joined as a
        noisy-or."""
        held = set(words)
        missed = 1.0
        for facet, weights in zip(self.facets, self._facet_weights, strict=True):
            got = sum(itertools.compress(weights, map(held.__contains__, facet)))
            missed *= 1.0 - got / sum(weights)
        return 1.0 - missed

    def _weigh_facets(self) -> None:
        """Each facet term's weight in the phrase coverage: its IDF times its weight in the
        examples' centroid (plus a little): the examples say which of the phrase's words
        make the topic ("transaction" and "lock" do in pages on SQL transactions and
        locking; "sql", on every page of a database's manual, does not; nor does the pair
        "sql transaction", which a command's reference page never writes). Without a
        centroid yet, the IDF alone, a word pair's twice its words'."""
        centroid, idf = self._centroid, self.df.idf
        self._facet_weights = [
            [
                idf(t) * (centroid.get(t, 0.0) + _CENTROID_FLOOR)
                if centroid
                else idf(t) * (2.0 if " " in t else 1.0)
                for t in facet
            ]
            for facet in self.facets
        ]

    def _feedback(self, phrase: float, counts: Counter[str]) -> None:
        """Pseudo-relevance feedback: the pages that match the phrase best so far (at most
        ``_MAX_PSEUDO``) join the examples, so pages on the topic in other words are found."""
        pseudo = self._pseudo
        if len(pseudo) >= _MAX_PSEUDO and phrase <= pseudo[-1][0]:
            return
        pseudo.append((phrase, counts))
        pseudo.sort(key=lambda item: item[0], reverse=True)
        del pseudo[_MAX_PSEUDO:]
        self._stale = True

    def _add_background(self, vector: Mapping[str, float]) -> None:
        """Count an off-topic judged page's vector in the crawl's background (bounded: past
        ``_MAX_BACKGROUND`` terms the lighter half is forgotten)."""
        background = self._background
        # the sums of a thousand terms in one update, no bytecode a term
        olds = map(background.get, vector, itertools.repeat(0.0))
        background.update(zip(vector, map(operator.add, olds, vector.values()), strict=True))
        self._background_pages += 1
        if len(background) > _MAX_BACKGROUND:
            keep = sorted(background.items(), key=lambda item: item[1], reverse=True)
            self._background = dict(keep[: _MAX_BACKGROUND // 2])

    def _refresh(self) -> None:
        """Rebuild the topic vector and the examples' centroid with the current IDF."""
        self.version += 1
        self._stale = False
        self._refreshed = self._judged
        vectors = [self.df.vector(c) for c in self._examples]
        vectors += [self.df.vector(c) for _, c in self._pseudo]
        background = (self._background, 1 / (self._background_pages + _BACKGROUND_SHRINK))
        total = _sum(vectors)
        # the sums' terms and their background read once for the centroid and the shortlist
        arrays = _arrays(total, background[0]) if len(total) > 4 * _CENTROID_TERMS else None
        self._centroid = _mean(total, len(vectors), background, arrays)
        if len(vectors) >= 2:
            # each left out in turn: the terms that can make its centroid are among the
            # heaviest of all (a vector left out only lowers its own)
            n = 4 * _CENTROID_TERMS
            shortlist = _heaviest(total, len(vectors) - 1, background, n, arrays)
            alone = _left_out(vectors, shortlist, len(vectors) - 1, background)
            self._reference = max(sum(alone) / len(alone), 0.05)
        phrase: dict[str, float] = {}
        for facet in self.facets:
            for t in facet:
                phrase[t] = phrase.get(t, 0.0) + self.df.idf(t)
        combined = dict(normalise(phrase))
        for t, w in self._centroid.items():
            combined[t] = combined.get(t, 0.0) + w
        self.vector = normalise(combined)
        top = sorted(self.vector.values(), reverse=True)[:5]
        self._strong = max(sum(top) / len(top), 1e-6) if top else 1.0
        self._weigh_facets()


def _sum(vectors: Sequence[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for vector in vectors:
        # each vector's sums in one update (its terms are distinct), as ``_add_background``
        olds = map(total.get, vector, itertools.repeat(0.0))
        total.update(zip(vector, map(operator.add, olds, vector.values()), strict=True))
    return total


_Arrays = tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.float64]]
"""The terms of a sum of vectors, their sums and their sums in the crawl's background."""


def _arrays(total: Mapping[str, float], sums: Mapping[str, float]) -> _Arrays:
    """``total``'s terms, their sums and their sums in ``sums`` (0 for none), as arrays."""
    names = list(total)
    weights = np.fromiter(total.values(), dtype=np.float64, count=len(names))
    background = map(sums.get, names, itertools.repeat(0.0))
    return names, weights, np.fromiter(background, dtype=np.float64, count=len(names))


def _heaviest(
    total: Mapping[str, float],
    count: int,
    background: tuple[dict[str, float], float],
    n: int,
    arrays: _Arrays | None = None,
) -> dict[str, float]:
    """The ``n`` heaviest terms of ``total`` (the sum of ``count`` vectors) less their share
    of the crawl's ``background`` (the sum of the off-topic judged pages' vectors and one over their
    number), with their sums."""
    sums, scale = background
    heaviest = _largest(total, count * _BACKGROUND_WEIGHT * scale, sums, n, arrays)
    return {t: total[t] for _, t in heaviest}


def _mean(
    total: Mapping[str, float],
    count: int,
    background: tuple[dict[str, float], float],
    arrays: _Arrays | None = None,
) -> dict[str, float]:
    """The unit centroid of ``count`` vectors summed in ``total`` less the crawl's
    ``background`` (Rocchio), cut to its ``_CENTROID_TERMS`` heaviest terms: the words that
    make the topic, not those every page of a site shares (a reference's "return", "value",
    "default"); ``arrays``: ``_arrays`` of ``total``, when read already."""
    sums, scale = background
    share = count * _BACKGROUND_WEIGHT * scale
    heaviest = _largest(total, share, sums, _CENTROID_TERMS, arrays)
    return normalise({t: w for w, t in heaviest if w > 0})


def _left_out(
    vectors: Sequence[dict[str, float]],
    shortlist: Mapping[str, float],
    count: int,
    background: tuple[dict[str, float], float],
) -> list[float]:
    """Each vector's cosine with ``_mean(shortlist, count, background, vector)``, the
    centroid of the others: the shortlist's names and its background's share read once, each
    centroid's weights taken by numpy (the same floats: the vector's weight, then the share,
    subtracted from each sum) and sorted in C."""
    names = list(shortlist)
    size = len(names)
    sums, scale = background
    share = count * _BACKGROUND_WEIGHT * scale
    totals = np.fromiter(shortlist.values(), dtype=np.float64, count=size)
    shares = share * np.fromiter(map(sums.get, names, itertools.repeat(0.0)), np.float64, size)
    alone = []
    for vector in vectors:
        lefts = np.fromiter(map(vector.get, names, itertools.repeat(0.0)), np.float64, size)
        heaviest = _top((totals - lefts) - shares, names, _CENTROID_TERMS)
        alone.append(cosine(vector, normalise({t: w for w, t in heaviest if w > 0})))
    return alone


def _largest(
    total: Mapping[str, float],
    share: float,
    sums: Mapping[str, float],
    n: int,
    arrays: _Arrays | None = None,
) -> list[tuple[float, str]]:
    """``heapq.nlargest(n, ((w - share * sums.get(t, 0.0), t) for t, w in total.items()))``,
    the differences taken by numpy (the same floats) when ``total`` is long or ``arrays`` are
    given (``_arrays`` of ``total``, read once for two of these): the examples'
    thousands of terms are weighed at each rebuild."""
    # ``sorted(..., reverse=True)[:n]`` is ``nlargest``'s definition, its loop in C (no two
    # pairs are equal: the terms differ): half the cost of a heap's loop in Python
    if arrays is None and len(total) <= 4 * n:
        get = sums.get
        return sorted([(w - share * get(t, 0.0), t) for t, w in total.items()], reverse=True)[:n]
    names, weights, background = arrays if arrays is not None else _arrays(total, sums)
    return _top(weights - share * background, names, n)


def _top(weights: npt.NDArray[np.float64], names: Sequence[str], n: int) -> list[tuple[float, str]]:
    """``sorted(zip(weights, names), reverse=True)[:n]``: the ``n`` heaviest found by numpy's
    partition, only they (and those tied with the last) sorted in Python."""
    size = len(names)
    if size <= n:
        return sorted(zip(weights.tolist(), names, strict=True), reverse=True)
    kth = np.partition(weights, size - n)[size - n]
    ties = np.flatnonzero(weights >= kth)  # n of them, more when tied at the kth
    tied = zip(weights[ties].tolist(), map(names.__getitem__, ties.tolist()), strict=True)
    return sorted(tied, reverse=True)[:n]


def _squash(score: float) -> float:
    """The logistic curve from a signal (about 0 off-topic, 1 on-topic) to a relevance."""
    return round(1.0 / (1.0 + math.exp(-_STEEPNESS * (score - 0.5))), 4)
