"""SURT keys (Sort-friendly URI Reordering Transform) for the CDXJ index, as replay tools
compute them for a URL they look up.

pywb and ReplayWeb.page look a URL up by its SURT as Internet Archive's ``surt`` package
gives it (defaults: scheme, user info, default port and fragment dropped, ``www.`` dropped,
host labels reversed, everything lower case, a trailing slash dropped, query parameters
sorted, common session ids removed, percent escapes made minimal). The index must use the
same key or the lookup misses, so this follows that package; it is written here because
``surt`` is AGPL-licensed. ``tests/wacz`` compares the two on a set of URLs.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes, urlsplit

__all__ = ["surt"]

_WWW = re.compile(r"^www\d*\.")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_QUERY_SESSION = re.compile(
    r"(?:jsessionid=[0-9a-z$]{10,}|phpsessid=[0-9a-z]{16,}|sid=[0-9a-z]{16,}"
    r"|aspsessionid[a-z]{8}=[0-9a-z]{16,}|cfid=[0-9]+&cftoken=[0-9a-z-]+)(?:&|$)"
)
_PATH_SESSION = re.compile(
    r"(?:;jsessionid=[0-9a-z]{32}$|^\([0-9a-z]{24}\)/|^\(\(?[a-z]\([0-9a-z]{24}\)\)+/)"
)
_PLAIN = re.compile(r"[!-~]*")
_UNESCAPED_MAX = 8
"""Rounds of unescaping (``%2525`` and deeper nests stop here, as in the ``surt`` package)."""


def surt(url: str) -> str:
    """The SURT key of ``url`` (an absolute http(s) URL); ``url`` itself when it cannot be
    split (a key that matches only the same odd text, never an error)."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").strip(".")
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = _WWW.sub("", _minimal(host).lower())
    # an IPv6 literal is kept as it is, not reversed
    key = host if ":" in host else ",".join(reversed(host.split(".")))
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        key += f":{port}"
    return key + ")" + _path(parts.path) + _query(parts.query)


def _path(path: str) -> str:
    path = _minimal(path).lower() or "/"
    path = _PATH_SESSION.sub("", path)
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path if path.startswith("/") else "/" + path


def _query(query: str) -> str:
    query = _minimal(query).lower()
    query = _QUERY_SESSION.sub("", query)
    # sorted as split, empty parameters kept (the ``surt`` package's keys have them too)
    return "?" + "&".join(sorted(query.split("&"))) if query else ""


def _minimal(text: str) -> str:
    """Percent escapes undone, then only what must be escaped escaped again (control
    characters, space, ``#``, ``%`` and non-ASCII bytes), upper-case hex as Google's
    canonicaliser writes it (lower-cased later with the rest)."""
    if "%" not in text and "#" not in text and text.isascii() and _PLAIN.fullmatch(text):
        return text  # most URLs: nothing to undo or escape
    data = text.encode("utf-8", "surrogateescape")
    for _ in range(_UNESCAPED_MAX):
        undone = unquote_to_bytes(data)
        if undone == data:
            break
        data = undone
    return "".join(f"%{b:02X}" if b <= 0x20 or b >= 0x7F or b in b"#%" else chr(b) for b in data)
