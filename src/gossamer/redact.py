"""Credentials kept out of every output: URLs and DSNs shown or stored without passwords.

Any scheme counts (``redis://``, ``rediss://``, ``postgres://``, ``http://user:pw@proxy`` ...):
the password of a URL's user info, and any ``...password=`` parameter (libpq's ``password``
and ``sslpassword``, in a query string or a ``key=value`` DSN), is a credential. The user name
stays, so a message still says who connected.
"""

from __future__ import annotations

import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s'\"<>]*)@")
"""A URL's scheme and user info: up to the last ``@`` before a space or a quote (an
unescaped ``/`` or ``@`` in a password stays inside it)."""
_PARAM = re.compile(
    r"(?i)(?P<lead>^|[?&;\s])(?P<key>[\w.-]*password)\s*=\s*"
    r"(?P<value>'(?:[^'\\]|\\.)*'?|[^&#;\s]*)"
)
"""A ``...password=`` parameter; a libpq value may be quoted (``password='a b'``)."""


def redact_text(text: str) -> str:
    """``text`` (a URL, a message, an exception's text) with every password masked.

    Each pattern is tried only on a text that may hold it (a crawl keeping text redacts every
    page's URL, some 60 characters, where the two searches cost 5 us): user info needs an
    ``@``, a parameter the word ``password``, which the case-blind search finds only where
    ``casefold`` makes that word of it (checked over all of Unicode: the long s, U+017F, is
    an ``s`` to both)."""
    if "@" in text:
        text = _USERINFO.sub(_mask_userinfo, text)
    if "password" in text.casefold():
        text = _PARAM.sub(lambda m: f"{m['lead']}{m['key']}={MASK}", text)
    return text


def redact_url(url: str) -> str:
    """``url`` with its password shown as ``***`` (``redis://user:***@host/0``): for output."""
    return redact_text(url)


def strip_password(url: str) -> str:
    """``url`` without its password at all (``postgres://user@host/db``): for storing a DSN
    whose reader supplies the password itself (``PGPASSWORD``, ``~/.pgpass``, its own flag).
    """
    url = _USERINFO.sub(_drop_password, url, count=1)
    url = _PARAM.sub(lambda m: "" if m["lead"] in ("&", ";") else m["lead"], url)
    return url.replace("?&", "?").rstrip("?&")


def strip_userinfo(url: str) -> str:
    """``url`` without its user name and password (``http://host/path``): the URI a request
    names (a WARC record's target), whose credentials travel in a header."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def has_password(url: str) -> bool:
    """True when ``url`` holds a password."""
    return redact_url(url) != url


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _ = match["userinfo"].partition(":")
    return f"{match['scheme']}{user}{colon and ':' + MASK}@"


def _drop_password(match: re.Match[str]) -> str:
    user = match["userinfo"].partition(":")[0]
    return f"{match['scheme']}{user}@" if user else match["scheme"]
