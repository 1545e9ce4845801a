"""What is known of a link before it is fetched, as the link scorer's features and a prior.

A link's evidence (Chakrabarti's "apprentice", ACHE's link classifier): the words of its
anchor text, of the text around it and of its URL, its host and top-level section, the
parent page's relevance and how many irrelevant pages in a row led to it (the distance since
the last relevant page). Each becomes a named feature (``a:lock`` an anchor word, ``u:wiki`` a
URL word, ``p:3`` a bucket of the parent's relevance, ``d:2`` the distance...) hashed into the
scorer's weights; the prior blends how well the anchor, the context and the URL match the
topic's words (:meth:`Topic.link_match`) with the parent's relevance, so the first links are
ordered before the scorer has learnt anything.

Pages of one site repeat their navigation on every page: the terms of a short text and the
weight index of a feature name are cached (bounded; cleared when full), so a link seen on many
pages costs a dictionary look-up, not a stemmer's pass.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from urllib.parse import urlsplit

import numpy as np

from gossamer.focus.anchors import LinkText
from gossamer.focus.learner import DIMENSIONS, Features
from gossamer.focus.topic import Topic

_URL_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]+")
MAX_CACHED = 50_000
"""Short texts and feature names cached each (some 10 MB at most)."""
_CONTEXT_CHARS = 200
"""Of the text around a link, the words nearest it count (the block's start)."""
_MAX_DISTANCE = 3


class LinkFeatures:
    """Features and priors of links for one topic (see the module docstring)."""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic
        self._words: dict[str, tuple[str, ...]] = {}
        self._match: dict[str, float] = {}
        self._index: dict[str, int] = {}
        self._version = topic.version

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
        if self._version != self.topic.version:
            self._version = self.topic.version
            self._match.clear()
        found = self._match.get(text)
        if found is None:
            found = self._match[text] = self.topic.link_match(self.words(text))
        return found

    def indices(self, names: Iterable[str]) -> Features:
        """The distinct weight indices of feature names (CRC-32: the same in every process)."""
        cache = self._index
        if len(cache) >= MAX_CACHED:
            cache.clear()
        out = set()
        for name in names:
            index = cache.get(name)
            if index is None:
                index = cache[name] = zlib.crc32(name.encode("utf-8", "replace")) & (DIMENSIONS - 1)
            out.add(index)
        return np.fromiter(out, dtype=np.int32, count=len(out))

    def of(
        self, link: str, text: LinkText | None, relevance: float, distance: int, parent: str
    ) -> tuple[Features, float, str, str]:
        """A link's features, its prior (0..1), its host and its path; ``parent`` is the URL
        of the page that links to it."""
        parts = urlsplit(link)
        host = parts.hostname or ""
        url_text = " ".join(_URL_WORDS.findall(f"{parts.path} {parts.query}"))
        anchor_text = text.anchor if text is not None else ""
        context_text = text.context[:_CONTEXT_CHARS] if text is not None else ""
        anchor_m = self.match(anchor_text)
        context_m = self.match(context_text)
        url_m = self.match(url_text)
        prior = 0.4 * anchor_m + 0.15 * context_m + 0.15 * url_m + 0.3 * relevance
        section = parts.path.strip("/").split("/", 1)[0]
        names = [
            "b",
            f"p:{int(relevance * 5)}",
            f"d:{min(distance, _MAX_DISTANCE)}",
            f"h:{host}",
            f"s:{host}/{section}",
            f"am:{int(anchor_m * 5)}",
            f"cm:{int(context_m * 5)}",
            f"um:{int(url_m * 5)}",
            f"g:{parent}#{text.group}" if text is not None and text.group else "g:",
            *(f"a:{w}" for w in self.words(anchor_text)),
            *(f"u:{w}" for w in self.words(url_text)),
            *(f"c:{w}" for w in self.words(context_text)),
        ]
        return self.indices(names), prior, host, parts.path
