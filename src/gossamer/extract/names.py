"""What a box's ``class`` and ``id`` say (`gossamer.extract.walk` reads them): a weight for or
against it as content, and whether it is unlikely to be content at all.

Names are read word by word (``article-body__text`` is three words; camelCase stays one word),
each word as a substring: readability's lists, with the names of consent banners, paywalls and
newsletters added. Both names and words are remembered, as a site repeats its names on every
page.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NAMES_CHARS", "MAX_WORD_CHARS", "forget_names", "read_names"]

_NEGATIVE = [
    "hidden",
    "banner",
    "combx",
    "comment",
    "contact",
    "foot",
    "masthead",
    "media",
    "meta",
    "outbrain",
    "promo",
    "related",
    "scroll",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "sponsor",
    "shopping",
    "tags",
    "tool",
    "widget",
]
_POSITIVE = [
    "article",
    "body",
    "content",
    "entry",
    "hentry",
    "main",
    "page",
    "post",
    "text",
    "blog",
    "story",
]
_UNLIKELY = [
    "agegate",
    "banner",
    "breadcrumb",
    "combx",
    "comment",
    "community",
    "consent",
    "cookie",
    "disqus",
    "extra",
    "footer",
    "gdpr",
    "header",
    "legends",
    "menu",
    "navigation",
    "navbar",
    "newsletter",
    "pager",
    "pagination",
    "popup",
    "promo",
    "related",
    "remark",
    "replies",
    "rss",
    "share",
    "shoutbox",
    "sidebar",
    "skyscraper",
    "social",
    "sponsor",
    "subscribe",
    "supplemental",
]
_MAYBE = ["and", "article", "body", "column", "content", "main", "shadow"]
_WORD = re.compile(r"[a-z0-9]+")
_NEG, _POS, _UNL, _MAY = 1, 2, 4, 8
_EXACT = {
    "ad": _NEG | _UNL,
    "ads": _NEG | _UNL,
    "advert": _NEG | _UNL,
    "advertisement": _NEG | _UNL,
    "hid": _NEG | _UNL,
    "nav": _UNL,
}
"""Words that say something only on their own (``ad`` is in ``header``)."""
_MASKS = {
    key: sum(
        flag
        for flag, words in ((_NEG, _NEGATIVE), (_POS, _POSITIVE), (_UNL, _UNLIKELY), (_MAY, _MAYBE))
        if any(word in key for word in words)
    )
    for key in {*_NEGATIVE, *_POSITIVE, *_UNLIKELY, *_MAYBE}
}
"""Each keyword's flags, with those of the keywords inside it (``footer`` is ``foot`` too)."""
_KEYWORDS = re.compile("|".join(sorted(_MASKS, key=len, reverse=True)))

_WORDS: dict[str, int] = {}
_NAMES: dict[str, tuple[float, bool]] = {}
_CACHE_MAX = 50_000
MAX_NAMES_CHARS = 256
MAX_WORD_CHARS = 40


def forget_names() -> None:
    """Forget the class and id names read so far, so that the next page is read as a crawl's
    first page of a site is (benchmarks time it so)."""
    _WORDS.clear()
    _NAMES.clear()


def read_names(names: str) -> tuple[float, bool]:
    """What a box's class and id say: its weight, and whether it is unlikely to be content.
    Remembered by name and by word, as a site repeats its names on every page; only the first
    `MAX_NAMES_CHARS` characters and words of at most `MAX_WORD_CHARS` are read."""
    names = names[:MAX_NAMES_CHARS]
    known = _NAMES.get(names)
    if known is not None:
        return known
    flags = 0
    for word in _WORD.findall(names.lower()):
        word = word[:MAX_WORD_CHARS]
        mask = _WORDS.get(word)
        if mask is None:
            mask = _read_word(word)
            if len(_WORDS) >= _CACHE_MAX:
                _WORDS.clear()
            _WORDS[word] = mask
        flags |= mask
    weight = (25.0 if flags & _POS else 0.0) - (25.0 if flags & _NEG else 0.0)
    known = (weight, bool(flags & _UNL) and not flags & _MAY)
    if len(_NAMES) >= _CACHE_MAX:
        _NAMES.clear()
    _NAMES[names] = known
    return known


def _read_word(word: str) -> int:
    exact = _EXACT.get(word)
    if exact is not None:
        return exact
    mask = 0
    for key in _KEYWORDS.findall(word):
        mask |= _MASKS[key]
    return mask
