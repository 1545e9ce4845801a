"""The robots.txt product token a User-Agent names (RFC 9309, section 2.2.1).

A crawler's robots.txt groups, ``X-Robots-Tag`` values and robots meta tags are addressed by
its product token, which must match its User-Agent: a site owner copies the name from their
logs. ``AcmeBot/2.0 (+https://acme.example/bot)`` names ``AcmeBot``; a browser-like
``Mozilla/5.0 (compatible; AcmeBot/2.1; +https://acme.example/bot)`` names ``AcmeBot`` too
(as Googlebot's does ``Googlebot``). A User-Agent naming browser products only names none.
"""

from __future__ import annotations

import re

DEFAULT_TOKEN = "gossamer"
"""The token of a User-Agent that names no product of its own."""
MAX_TOKEN_CHARS = 64

_PRODUCT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)/")
"""A product and its version's slash: the token's letters as RFC 9309 allows them
(``A-Z a-z _ -``; digits too, as in ``Bingbot`` lookalikes ``bot2``)."""
_BROWSER_PRODUCTS = frozenset(
    {
        "mozilla",
        "applewebkit",
        "chrome",
        "chromium",
        "safari",
        "gecko",
        "firefox",
        "version",
        "mobile",
        "edg",
        "edge",
        "opr",
        "headlesschrome",
        "khtml",
        "trident",
        "presto",
    }
)


def product_token(user_agent: str) -> str:
    """The first product of ``user_agent`` that is not a browser's (`DEFAULT_TOKEN` when
    there is none), at most `MAX_TOKEN_CHARS` characters. A User-Agent with no version
    (``AcmeBot``) is its own token when it is one word."""
    for match in _PRODUCT.finditer(user_agent[:1024]):
        name = match.group(1)
        if name.lower() not in _BROWSER_PRODUCTS:
            return name[:MAX_TOKEN_CHARS]
    bare = user_agent.strip()
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", bare) and bare.lower() not in _BROWSER_PRODUCTS:
        return bare[:MAX_TOKEN_CHARS]
    return DEFAULT_TOKEN


OTHER_CRAWLERS = frozenset(
    {
        "googlebot",
        "bingbot",
        "slurp",
        "duckduckbot",
        "baiduspider",
        "yandexbot",
        "applebot",
        "facebookexternalhit",
        "gptbot",
        "ccbot",
        "ia_archiver",
    }
)
"""Product tokens of well-known crawlers: a User-Agent naming one takes the rights site
owners give that crawler in their robots.txt (see `borrowed_name`)."""


def borrowed_name(user_agent: str, robots_token: str | None) -> str | None:
    """The well-known crawler whose robots.txt rules ``user_agent`` takes, when no
    ``robots_token`` names the crawl otherwise; None when it takes none."""
    token = robots_token or product_token(user_agent)
    return token if token.lower() in OTHER_CRAWLERS else None
