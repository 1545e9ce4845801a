"""Names of the special endpoints that generated pages may link to.

Every host serves every special endpoint (see ``specials.py`` for the behaviour); this table
only says which target a page links to when a special is chosen by ``generate``.
"""

from __future__ import annotations

SPECIALS: dict[str, str] = {
    "redirect-301": "/redirect/301",
    "redirect-302-abs": "/redirect/302/abs",
    "redirect-307-rel": "/redirect/307/rel",
    "redirect-308-cross": "/redirect/308/cross",
    "redirect-chain": "/redirect/chain/3",
    "redirect-long-chain": "/redirect/chain/12",
    "redirect-loop": "/redirect/loop/a",
    "status-404": "/status/404",
    "status-410": "/status/410",
    "status-500": "/status/500",
    "status-503": "/status/503",
    "flaky-429": "/flaky/429",
    "flaky-500": "/flaky/500",
    "flaky-503": "/flaky/503",
    "slow": "/slow?ms=300",
    "hang": "/hang",
    "trickle": "/trickle",
    "drop": "/drop",
    "reset": "/reset",
    "broken-chunked": "/broken-chunked",
    "gzip-bomb": "/gzip-bomb",
    "gzip": "/encoded/gzip",
    "deflate": "/encoded/deflate",
    "brotli": "/encoded/br",
    "huge": "/huge",
    "pdf": "/files/doc.pdf",
    "png": "/files/image.png",
    "malformed": "/malformed",
    "charset-windows-1251": "/charset/windows-1251",
    "charset-iso-8859-1": "/charset/iso-8859-1",
    "charset-shift-jis": "/charset/shift_jis",
    "calendar": "/calendar/2024/01",
    "repeat": "/repeat/a/",
    "long-url": "/long/x",
    "poison-content-type": "/poison/content-type",
    "poison-charset": "/poison/charset",
    "poison-title": "/poison/title",
    "poison-location": "/poison/location",
    "poison-retry-after": "/poison/retry-after",
    "poison-offsite-links": "/poison/offsite-links",
    "attr-bomb": "/hostile/attr-bomb",
    "deep": "/hostile/deep",
    "unclosed-links": "/hostile/unclosed-links?n=600",
    "gzip-multi": "/encoded/gzip-multi",
    "deflate-lookalike": "/encoded/deflate-raw-lookalike",
}

TRAPS = frozenset({"calendar", "repeat", "long-url"})
"""Endpoints that generate new URLs forever."""

SLOW = frozenset({"slow", "hang", "trickle", "huge", "gzip-bomb", "attr-bomb"})
"""Endpoints that take long, never finish, or send very large bodies."""

QUICK_SPECIALS = frozenset(SPECIALS) - TRAPS - SLOW
"""Specials a crawl gets through in about a second (429/503 still ask for 1 s Retry-After)."""

ALL_SPECIALS = frozenset(SPECIALS)
