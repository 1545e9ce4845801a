"""What is known of a link before it is fetched, as the link scorer's features and a prior.

A link's evidence (Chakrabarti's "apprentice", ACHE's link classifier): the words of its
anchor text, of the text around it and of its URL, its host and top-level section, the
parent page's relevance and how many irrelevant pages in a row led to it (the distance since
the last relevant page). Each becomes a named feature (``a:lock`` an anchor word, ``u:wiki`` a
URL word, ``p:3`` a bucket of the parent's relevance, ``d:2`` the distance...) hashed into the
scorer's weights; the prior blends how well the anchor, the context and the URL match the
topic's words (:meth:`Topic.link_match`) with the parent's relevance, so the first links are
ordered before the scorer has learnt anything.

Pages of one site repeat their navigation on every page: the terms of a short text, the weight
index of a feature name and a URL's own features (its host, section and words, whatever the
anchor and context of the page linking to it) are cached (bounded; cleared when full), so a
link seen on many pages costs a dictionary look-up, not a stemmer's pass. A page's links are
put together as tuples of indices and made arrays at the end (:meth:`LinkFeatures.many`): a
numpy call costs more than the tuple work it would save.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

import numpy as np

from gossamer.focus.anchors import LinkText
from gossamer.focus.learner import DIMENSIONS, Features
from gossamer.focus.topic import Topic

_URL_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_PLAIN_URL = re.compile(
    r"https?://([a-z0-9.-]+)(?::[0-9]*)?(/[\x21\x22\x24-\x3e\x40-\x7e]*)?(?:\?([\x21\x22\x24-\x7e]*))?"
)
"""An http(s) URL of printable ASCII with a plain lower-case host, no user, fragment or space:
its host, path and query as ``urlsplit`` gives them, from one match (``urlsplit`` costs several
times more, and a crawl meets each link once); any other URL goes to ``urlsplit``."""
MAX_CACHED = 50_000
"""Short texts and feature names cached each (some 10 MB at most)."""
_Ids = tuple[int, ...]
"""Weight indices while a link's features are put together: one array is made of them per
link at the end (a numpy call costs more than the tuple operations it replaces)."""
_Static = tuple[_Ids, float, str, str]
_Url = tuple[_Ids, _Ids, str, str, str]
_ADOPT_EVERY = 25
MAX_STATICS = 20_000
"""Links whose URL and text features are cached (some 10 MB at most)."""
_CONTEXT_CHARS = 200
"""Of the text around a link, the words nearest it count (the block's start)."""
_MAX_DISTANCE = 3
Scored = tuple[Features, float, str, str]
"""A link's features, its prior (0..1), its host and its path."""


class LinkFeatures:
    """Features and priors of links for one topic (see the module docstring)."""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic
        self._words: dict[str, tuple[str, ...]] = {}
        self._match: dict[str, float] = {}
        self._index = _Hashes("")
        self._statics: dict[tuple[str, str, str], _Static] = {}
        self._texts: dict[tuple[str, str, str], tuple[_Ids, str, str, str]] = {}
        self._by_text: dict[tuple[str, str], _Ids] = {}
        self._by_word: dict[str, _Hashes] = {}
        self._urls: dict[str, _Url] = {}
        self._dynamic: dict[tuple[str, int, int, int], _Ids] = {}
        self._buckets: dict[tuple[int, int, int], _Ids] = {}
        self._version = topic.version
        self._adopted = 0

    def words(self, text: str) -> tuple[str, ...]:
        """The topic's terms of a short text (cached)."""
        cache = self._words
        found = cache.get(text)
        if found is None:
            if len(cache) >= MAX_CACHED:
                cache.clear()
                self._match.clear()
            found = cache[text] = tuple(self.topic.words(text))
        return found

    def match(self, text: str) -> float:
        """How strongly a short text points at the topic, 0..1 (cached while the topic's
        vector stays the same)."""
        self._check_version()
        return self._matched(text)

    def _matched(self, text: str) -> float:
        """``match`` once the topic's version is checked (a page's links check it once)."""
        found = self._match.get(text)
        if found is None:
            found = self._match[text] = self.topic.link_match(self.words(text))
        return found

    def _check_version(self) -> None:
        """Adopt the topic's new vector, at most once every ``_ADOPT_EVERY`` judged pages (the
        caches start over each time)."""
        topic = self.topic
        if self._version != topic.version and topic.judged - self._adopted >= _ADOPT_EVERY:
            self._version = topic.version
            self._adopted = topic.judged
            self._match.clear()
            self._statics.clear()

    def indices(self, names: Iterable[str]) -> Features:
        """The distinct weight indices of feature names (CRC-32: the same in every process)."""
        return np.array(self._ids(names), dtype=np.int32)

    def _ids(self, names: Iterable[str]) -> _Ids:
        """``indices`` as a tuple, in the same order (a set's, built the same way)."""
        cache = self._index
        if len(cache) >= MAX_CACHED:
            cache.clear()
        return tuple(set(map(cache.__getitem__, names)))

    def of(
        self, link: str, text: LinkText | None, relevance: float, distance: int, parent: str
    ) -> Scored:
        """A link's features, its prior (0..1), its host and its path; ``parent`` is the URL
        of the page that links to it."""
        return self.many([link], [text], relevance, distance, parent)[0]

    def many(
        self,
        links: Sequence[str],
        texts: Sequence[LinkText | None],
        relevance: float,
        distance: int,
        parent: str,
    ) -> list[Scored]:
        """``of`` of a page's links at once (``texts`` in the same order): their indices are
        put together as tuples, each link's made an array of its own at the end (its own
        memory: a waiting URL's features keep no page's array alive; one call a link costs
        less than one array of them all sliced and copied)."""
        if not links:
            return []
        self._check_version()  # the topic stays the same while its links are read
        ids: list[_Ids] = []
        out: list[tuple[float, str, str]] = []
        for link, text in zip(links, texts, strict=True):
            static, prior, host, path = self._one(link, text, relevance, distance, parent)
            ids.append(static)
            out.append((prior, host, path))
        return [
            (np.array(found, dtype=np.int32), prior, host, path)
            for found, (prior, host, path) in zip(ids, out, strict=True)
        ]

    def _one(
        self, link: str, text: LinkText | None, relevance: float, distance: int, parent: str
    ) -> tuple[_Ids, float, str, str]:
        anchor = text.anchor if text is not None else ""
        context = text.context[:_CONTEXT_CHARS] if text is not None else ""
        static, match, host, path = self._static(link, anchor, context)
        prior = match + 0.3 * relevance
        key = (parent, text.group if text is not None else 0, int(relevance * 5), distance)
        found = self._dynamic.get(key)
        if found is None:  # the same for every link of one list of one page
            if len(self._dynamic) >= MAX_CACHED:
                self._dynamic.clear()
            group = f"g:{parent}#{key[1]}" if key[1] else "g:"
            names = ("b", f"p:{key[2]}", f"d:{min(distance, _MAX_DISTANCE)}", group)
            found = self._dynamic[key] = self._ids(names)
        return static + found, prior, host, path

    def _static(self, link: str, anchor: str, context: str) -> _Static:
        """What a link's URL and texts give, whichever page links to it: the indices of
        their features, their share of the prior, the host and the path. The words' features
        are cached for good (a site's navigation repeats on every page), how well the texts
        match the topic while its vector stays the same (checked by the caller)."""
        key = (link, anchor, context)
        found = self._statics.get(key)
        if found is not None:
            return found
        words = self._texts.get(key)
        if words is None:
            words = self._words_of(link, anchor, context)
        base, url_text, host, path = words
        anchor_m = self._matched(anchor)
        context_m = self._matched(context)
        url_m = self._matched(url_text)
        levels = (int(anchor_m * 5), int(context_m * 5), int(url_m * 5))
        buckets = self._buckets.get(levels)
        if buckets is None:  # a few hundred at most: no name made and hashed a link
            a, c, u = levels
            buckets = self._buckets[levels] = self._ids((f"am:{a}", f"cm:{c}", f"um:{u}"))
        match = 0.4 * anchor_m + 0.15 * context_m + 0.15 * url_m
        if len(self._statics) >= MAX_STATICS:
            self._statics.clear()
        found = self._statics[key] = (base + buckets, match, host, path)
        return found

    def _words_of(self, link: str, anchor: str, context: str) -> tuple[_Ids, str, str, str]:
        """The indices of a link's word, host and section features, the words of its URL,
        its host and its path (cached)."""
        place, url_words, url_text, host, path = self._url_of(link)
        anchor_words = self._text_ids("a:", anchor)
        indices = place + anchor_words + url_words + self._text_ids("c:", context)
        if len(self._texts) >= MAX_STATICS:
            self._texts.clear()
        found = self._texts[(link, anchor, context)] = (indices, url_text, host, path)
        return found

    def _url_of(self, link: str) -> _Url:
        """The indices of a link's host and section features and of its URL's words, the
        words of its URL, its host and its path (cached: a link recurs with other anchors
        and contexts on other pages)."""
        found = self._urls.get(link)
        if found is not None:
            return found
        host, path, query = _host_path_query(link)
        url_text = " ".join(_URL_WORDS.findall(f"{path} {query}"))
        section = path.strip("/").split("/", 1)[0]
        place = self._ids((f"h:{host}", f"s:{host}/{section}"))
        if len(self._urls) >= MAX_STATICS:
            self._urls.clear()
        found = self._urls[link] = (
            place,
            self._text_ids("u:", url_text),
            url_text,
            host,
            path,
        )
        return found

    def _text_ids(self, prefix: str, text: str) -> _Ids:
        """The indices of a short text's word features (``a:lock`` for ``prefix`` ``a:``),
        cached: a site's anchors and list items repeat. Keyed by the pair, not ``prefix +
        text``: the text's hash is kept by the string, a new string is hashed again whole."""
        key = (prefix, text)
        found = self._by_text.get(key)
        if found is None:
            if len(self._by_text) >= MAX_CACHED:
                self._by_text.clear()
            found = self._by_text[key] = self._word_ids(prefix, self.words(text))
        return found

    def _word_ids(self, prefix: str, words: Iterable[str]) -> _Ids:
        """``_ids`` of ``prefix`` + each word, looked up by the word (a term, its hash kept
        by the string: no feature name is built and hashed again), in the same order."""
        cache = self._by_word.get(prefix)
        if cache is None:
            cache = self._by_word[prefix] = _Hashes(prefix)
        if len(cache) >= MAX_CACHED // 3:  # three prefixes: no more than the names were
            cache.clear()
        return tuple(set(map(cache.__getitem__, words)))


class _Hashes(dict[str, int]):
    """A word -> the weight index of ``prefix`` + the word (CRC-32: the same in every
    process); a word met for the first time is hashed by ``__missing__``, so a text's words
    are looked up and their set built in one pass in C (the same set, built in the same
    order, as one look-up at a time)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def __missing__(self, word: str) -> int:
        name = self.prefix + word
        index = self[word] = zlib.crc32(name.encode("utf-8", "replace")) & (DIMENSIONS - 1)
        return index


def _host_path_query(url: str) -> tuple[str, str, str]:
    """``urlsplit(url)``'s hostname (or ""), path and query."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is not None:
        host, path, query = plain.groups()
        return host, path or "", query or ""
    parts = urlsplit(url)
    return parts.hostname or "", parts.path, parts.query
